package input

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
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
// the top). Only the document's first value is read.
func JSON(doc []byte) error {
	return JSONInto(doc, nil)
}

// JSONInto is JSON for a request body about to be decoded into a value of
// type t (a pointer to a struct or a slice), with the checks of its shape
// that encoding/json does not make, in the same walk of the tokens:
//
//   - a key of an object decoded into a struct must name one of its
//     fields exactly (encoding/json ignores case, so {"title": "a",
//     "TITLE": "b"} stored "b", and it names an unknown field by its last
//     key only); the error names the key by its whole path,
//     "items[3].bogus";
//   - null is refused ("must not be null") where encoding/json would leave
//     the Go value as it was or set a pointer to nil, so that a member given
//     as null would read as a member left out: it is taken only by a
//     json.RawMessage (any JSON value, null included), an interface, or a
//     type that decodes itself (json.Unmarshaler, which sees the null).
//
// Values of types that decode themselves, maps and raw values are not
// looked into. A document that is not valid JSON is not this function's
// concern: it stops at the first syntax error and lets the decoder say so.
func JSONInto(doc []byte, t reflect.Type) error {
	w := walker{root: t}
	sc := scanner{doc: doc}
	for {
		kind, start, end := sc.next()
		if kind == tokEnd {
			// The end, or a syntax error the caller's decoder reports.
			return nil
		}
		done, err := w.visit(kind, doc[start:end])
		if err != nil || done {
			return err
		}
		if len(w.stack) == 0 {
			return nil // the first value is read; what follows is the decoder's
		}
	}
}

// PathAt names, as JSON's errors do ("items[1].priority"), the value of
// the JSON document doc that ends at offset, or whose opening brace or
// bracket does (the offset encoding/json's UnmarshalTypeError gives); ""
// when none does.
func PathAt(doc []byte, offset int64) string {
	var w walker
	sc := scanner{doc: doc}
	for {
		kind, start, end := sc.next()
		if kind == tokEnd {
			return ""
		}
		if top := w.top(); int64(end) >= offset && kind != tokClose && (top == nil || !top.object || !top.wantKey) {
			return w.path(true)
		}
		// The text checks are not this function's: only the path is kept.
		switch kind {
		case tokOpenObject, tokOpenArray:
			w.stack = append(w.stack, frame{object: kind == tokOpenObject, wantKey: kind == tokOpenObject})
		case tokClose:
			if !w.close(doc[start]) {
				return ""
			}
		case tokString:
			if top := w.top(); top != nil && top.object && top.wantKey {
				k, ok := jsonKey(doc[start:end])
				if !ok {
					return ""
				}
				top.key, top.wantKey = k, false
				continue
			}
			w.valueDone()
		default:
			w.valueDone()
		}
	}
}

// tokKind is the kind of a token the scanner read.
type tokKind byte

const (
	tokEnd        tokKind = iota // the end of the document, or what is not JSON
	tokOpenObject                // {
	tokOpenArray                 // [
	tokClose                     // } or ]
	tokString
	tokNumber
	tokBool
	tokNull
)

// scanner reads the tokens of a JSON document without decoding them: the
// checks need a value's text, not the value (encoding/json's
// Decoder.Token, which decodes every one into an interface, cost the
// checks two thirds of a body's decoding). It skips white space and the
// separators , and :, whose places the walker does not need; it stops
// (tokEnd) at anything else that is not JSON, which the caller's decoder
// reports.
type scanner struct {
	doc []byte
	pos int
}

// next reads the next token: its kind and where its text is.
func (s *scanner) next() (kind tokKind, start, end int) {
	b, i := s.doc, s.pos
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' || b[i] == ',' || b[i] == ':') {
		i++
	}
	if i >= len(b) {
		return tokEnd, i, i
	}
	start = i
	switch c := b[i]; {
	case c == '{':
		kind, i = tokOpenObject, i+1
	case c == '[':
		kind, i = tokOpenArray, i+1
	case c == '}' || c == ']':
		kind, i = tokClose, i+1
	case c == '"':
		for i++; ; i++ {
			if i >= len(b) || b[i] < 0x20 {
				return tokEnd, start, start // unterminated, or a raw control character
			}
			if b[i] == '\\' {
				i++
				continue
			}
			if b[i] == '"' {
				break
			}
		}
		kind, i = tokString, i+1
	case c == '-' || c >= '0' && c <= '9':
		j, ok := numberEnd(b, i)
		if !ok {
			return tokEnd, start, start
		}
		kind, i = tokNumber, j
	case bytes.HasPrefix(b[i:], []byte("true")):
		kind, i = tokBool, i+4
	case bytes.HasPrefix(b[i:], []byte("false")):
		kind, i = tokBool, i+5
	case bytes.HasPrefix(b[i:], []byte("null")):
		kind, i = tokNull, i+4
	default:
		return tokEnd, start, start
	}
	s.pos = i
	return kind, start, i
}

// numberEnd is the end of the JSON number beginning at b[i]:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?; ok false when
// none begins there.
func numberEnd(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

// jsonKey decodes the text of a string token, quotes included (ok false
// when it is not a JSON string).
func jsonKey(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var k string
	err := json.Unmarshal(raw, &k)
	return k, err == nil
}

// walker follows the path of the token being read.
type walker struct {
	root  reflect.Type // nil: the shape is not checked
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
	// fields are the members of the struct the object is decoded into,
	// elem the element type of the slice the array is decoded into; nil
	// when not looked into.
	fields map[string]reflect.Type
	elem   reflect.Type
}

// visit checks one token, of the kind given, whose text is raw; done is
// true where the document is not JSON (the decoder says so).
func (w *walker) visit(kind tokKind, raw []byte) (done bool, err error) {
	switch kind {
	case tokOpenObject, tokOpenArray:
		f := frame{object: kind == tokOpenObject, wantKey: kind == tokOpenObject}
		if vt := into(w.valueType()); vt != nil {
			switch {
			case f.object && vt.Kind() == reflect.Struct:
				f.fields = jsonFields(vt)
			case !f.object && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array) && vt.Elem().Kind() != reflect.Uint8:
				f.elem = vt.Elem()
			}
		}
		w.stack = append(w.stack, f)
		return false, nil
	case tokClose:
		return !w.close(raw[0]), nil
	case tokString:
		if top := w.top(); top != nil && top.object && top.wantKey {
			k, ok := jsonKey(raw)
			if !ok {
				return true, nil
			}
			return false, w.key(k, raw)
		}
		if problem := rawStringProblem(raw); problem != "" {
			return false, wgerr.InvalidField(w.path(true), "%s", problem)
		}
	case tokNumber:
		if problem := numberProblem(string(raw)); problem != "" {
			return false, wgerr.InvalidField(w.path(true), "%s", problem)
		}
	case tokNull:
		if !nullable(w.valueType()) {
			return false, wgerr.InvalidField(w.path(true), "must not be null (leave the member out instead)")
		}
	}
	if top := w.top(); top != nil && top.object && top.wantKey {
		return true, nil // a value where a key belongs: not JSON
	}
	w.valueDone()
	return false, nil
}

// close ends the innermost container with c, '}' or ']'; false when c
// does not close it (not JSON).
func (w *walker) close(c byte) bool {
	top := w.top()
	if top == nil || top.object != (c == '}') {
		return false
	}
	w.stack = w.stack[:len(w.stack)-1]
	w.valueDone()
	return true
}

// key checks the key k of the object being read.
func (w *walker) key(k string, raw []byte) error {
	top := w.top()
	if problem := rawStringProblem(raw); problem != "" {
		return wgerr.InvalidField(w.path(false), "an object key %s", problem)
	}
	top.key, top.wantKey = k, false
	if top.seen[k] {
		return wgerr.InvalidField(w.path(true), "is given twice (the keys of an object must be unique)")
	}
	if top.seen == nil {
		top.seen = make(map[string]bool)
	}
	top.seen[k] = true
	if top.fields != nil {
		if _, ok := top.fields[k]; !ok {
			for name := range top.fields {
				if strings.EqualFold(name, k) {
					return wgerr.InvalidField(w.path(true), "unknown field (field names are case-sensitive: %q)", name)
				}
			}
			return wgerr.InvalidField(w.path(true), "unknown field")
		}
	}
	return nil
}

// valueType is the Go type the value being read is decoded into; nil when
// the shape is not checked there.
func (w *walker) valueType() reflect.Type {
	top := w.top()
	switch {
	case top == nil:
		return w.root
	case top.object && top.fields != nil:
		return top.fields[top.key]
	case !top.object:
		return top.elem
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// into is the type whose shape a value decoded into t must have: t
// without its pointers; nil for a type that decodes itself.
func into(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// nullable reports whether a null decoded into t says something of its
// own: t takes any JSON value, or decodes itself. (A pointer is set to
// nil, as if the member were absent, and any other type is left as it
// was.)
func nullable(t reflect.Type) bool {
	switch {
	case t == nil, t.Kind() == reflect.Interface:
		return true
	case t.Kind() == reflect.Pointer:
		return false
	}
	return reflect.PointerTo(t).Implements(unmarshalerType)
}

// fieldsOf caches jsonFields by type.
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names of a struct's fields (those of embedded
// structs without a name of their own included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := structFields(t)
	fieldsOf.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
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

// Line refuses s, the value of field, a single line of text that people
// read as it is shown (a title, a name, a worker's label, a key), unless
// it is text (Text) without
//
//   - a control character: C0 (tab and line breaks included), DEL, C1;
//   - a line or paragraph separator (U+2028, U+2029);
//   - an invisible format character (Unicode category Cf): the
//     bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and the other
//     embeddings, overrides, isolates and marks), zero-width spaces, soft
//     hyphens, the byte order mark, the tag characters (U+E0000..U+E007F,
//     invisible copies of ASCII), but for U+200C and U+200D (zero-width
//     non-joiner and joiner), which scripts and emoji sequences need.
//
// Such characters make a title read differently from what it is (an
// override reverses what follows it), hide text from the person reading
// it while an agent reads it, or break the lines of tables and logs.
func Line(field, s string) error {
	if err := Text(field, s); err != nil {
		return err
	}
	for i, r := range s {
		if why := lineProblem(r); why != "" {
			return refused(field, s, i, r, why)
		}
	}
	return nil
}

// Prose refuses s, the value of field, a text of several lines (a body, a
// question, an answer, a reason), unless it is text (Text) whose only
// control characters are tab, line feed and carriage return, without a
// bidirectional control or a tag character (see Line). Other format
// characters (zero-width spaces and joiners, soft hyphens) are kept: text
// pasted from documents carries them, and they do not reorder or hide
// what a person reads.
func Prose(field, s string) error {
	if err := Text(field, s); err != nil {
		return err
	}
	for i, r := range s {
		if why := proseProblem(r); why != "" {
			return refused(field, s, i, r, why)
		}
	}
	return nil
}

func refused(field, s string, at int, r rune, why string) error {
	return wgerr.InvalidField(field, "must not contain %U (%s), found at character %d", r, why, utf8.RuneCountInString(s[:at])+1)
}

func lineProblem(r rune) string {
	switch {
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return "a control character; this field is one line of visible text"
	case r == '\u2028' || r == '\u2029':
		return "a line break; this field is one line"
	case r == '\u200c' || r == '\u200d':
		return ""
	case bidi(r):
		return "a bidirectional control, which reorders the text around it"
	case unicode.Is(unicode.Cf, r):
		return "an invisible format character"
	}
	return ""
}

func proseProblem(r rune) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return "a control character other than tab and line breaks"
	case bidi(r):
		return "a bidirectional control, which reorders the text around it"
	case r >= 0xe0000 && r <= 0xe007f:
		return "a tag character, an invisible copy of ASCII"
	}
	return ""
}

// bidi reports whether r is one of Unicode's bidirectional formatting
// characters (UAX #9): the marks, embeddings, overrides and isolates.
func bidi(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e':
		return true
	case r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}
