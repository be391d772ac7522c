package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// The bounds of PostgreSQL's numeric (and so of a jsonb number): at most
// this many digits before the decimal point and after it.
const (
	maxNumericIntDigits  = 131072
	maxNumericFracDigits = 16383
)

// Text refuses s, the value of field, unless it is valid UTF-8 without NUL.
func Text(field, s string) error {
	if problem := textProblem(s); problem != "" {
		return wgerr.InvalidField(field, "%s", problem)
	}
	return nil
}

func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL (U+0000)"
	}
	return ""
}

// Values checks every name and value of a parameter set (a query string, a
// form); field names a parameter by its name.
func Values(params map[string][]string) error {
	for name, vs := range params {
		if problem := textProblem(name); problem != "" {
			return wgerr.InvalidField(strconv.QuoteToASCII(name), "a parameter name %s", problem)
		}
		for _, v := range vs {
			if err := Text(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// JSON checks a syntactically valid JSON document (a request body, as the
// caller already decoded it): every string, object key included, must be
// valid UTF-8 and must not hold NUL or an unpaired surrogate, given raw or
// as a \u escape, every number must fit PostgreSQL's numeric, and no
// object may give a key twice. The error names the offending value by its
// path, e.g. "children[0].title" or "metadata.owner" (a key given twice
// too); a key that is not text is named by its object's path ("body" at
// the top).
func JSON(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := walker{dec: dec}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// Not this package's concern: the caller's decoder reports syntax.
			return nil
		}
		if err := w.visit(tok, doc[start:dec.InputOffset()]); err != nil {
			return err
		}
	}
}

// walker follows the path of the token being read.
type walker struct {
	dec   *json.Decoder
	stack []frame
}

// frame is one open object or array: the key of the value being read, or
// the index of the next element.
type frame struct {
	object bool
	key    string
	index  int
	// wantKey: inside an object, the next string token is a key.
	wantKey bool
	// seen are the object's keys read so far (a key given twice is
	// refused: decoders disagree on which one counts).
	seen map[string]bool
}

// visit checks one token; raw is the text it was read from (with any
// separators before it).
func (w *walker) visit(tok json.Token, raw []byte) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '[':
			w.stack = append(w.stack, frame{object: t == '{', wantKey: t == '{'})
		default:
			w.stack = w.stack[:len(w.stack)-1]
			w.valueDone()
		}
		return nil
	case string:
		if top := w.top(); top != nil && top.object && top.wantKey {
			if problem := rawStringProblem(raw); problem != "" {
				return wgerr.InvalidField(w.path(false), "an object key %s", problem)
			}
			top.key, top.wantKey = t, false
			if top.seen[t] {
				return wgerr.InvalidField(w.path(true), "is given twice (the keys of an object must be unique)")
			}
			if top.seen == nil {
				top.seen = make(map[string]bool)
			}
			top.seen[t] = true
			return nil
		}
		if problem := rawStringProblem(raw); problem != "" {
			return wgerr.InvalidField(w.path(true), "%s", problem)
		}
	case json.Number:
		if problem := numberProblem(string(t)); problem != "" {
			return wgerr.InvalidField(w.path(true), "%s", problem)
		}
	}
	w.valueDone()
	return nil
}

func (w *walker) top() *frame {
	if len(w.stack) == 0 {
		return nil
	}
	return &w.stack[len(w.stack)-1]
}

// valueDone moves past a value just read.
func (w *walker) valueDone() {
	if top := w.top(); top != nil {
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
}

// path names the value being read (withLast) or the innermost open
// container (not withLast), as "a.b[2].c"; the document itself is "body".
func (w *walker) path(withLast bool) string {
	var b strings.Builder
	n := len(w.stack)
	if !withLast {
		n--
	}
	for i, f := range w.stack[:max(n, 0)] {
		if i == 0 && !f.object {
			// The document is an array: its elements are body[i].
			b.WriteString("body")
		}
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			fmt.Fprintf(&b, "[%d]", f.index)
		}
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// rawStringProblem inspects the raw text of one JSON string token (which
// may be preceded by separators): its bytes, and the characters its \u
// escapes stand for.
func rawStringProblem(raw []byte) string {
	if !utf8.Valid(raw) {
		return "must be valid UTF-8"
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return "" // a raw NUL byte is a syntax error, refused before
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			continue
		}
		i += 4
		switch {
		case r == 0:
			return `must not contain NUL (U+0000, "\u0000")`
		case r >= 0xDC00 && r <= 0xDFFF:
			return "must not contain an unpaired surrogate escape"
		case r >= 0xD800 && r <= 0xDBFF:
			// A high surrogate must be followed by a low one.
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return "must not contain an unpaired surrogate escape"
			}
			lo, ok := hex4(raw[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return "must not contain an unpaired surrogate escape"
			}
			i += 6
		}
	}
	return ""
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// numberProblem refuses a JSON number PostgreSQL's numeric cannot hold (too
// many digits before or after the decimal point once the exponent applies).
func numberProblem(s string) string {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxNumericIntDigits+maxNumericFracDigits || e < -(maxNumericIntDigits+maxNumericFracDigits) {
			return "is a number out of range"
		}
		exp = e
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	if len(intPart)+exp > maxNumericIntDigits || len(frac)-exp > maxNumericFracDigits {
		return "is a number out of range"
	}
	return ""
}
