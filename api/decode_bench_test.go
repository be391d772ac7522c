package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// benchPlan is a plan body of n items, each with two children, labels,
// a body and dependencies: the largest kind of body the API decodes.
func benchPlan(n int) []byte {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"key": fmt.Sprintf("k%d", i), "title": fmt.Sprintf("Item %d: caf\u00e9 and a longer title", i),
			"body": strings.Repeat("Some markdown text. ", 10), "priority": i % 7, "labels": []string{"go", "db"},
			"children": []map[string]any{
				{"key": fmt.Sprintf("k%d.a", i), "title": "first part"},
				{"key": fmt.Sprintf("k%d.b", i), "title": "second part", "depends_on": []string{fmt.Sprintf("k%d.a", i)}},
			},
		}
		if i > 0 {
			items[i]["depends_on"] = []string{fmt.Sprintf("k%d", i-1)}
		}
	}
	b, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkDecode compares decodeBody with the decoding it replaced
// (baseline, copied below: encoding/json's strict Decode, then input.JSON's
// walk of Decoder.Token's tokens, then a third such walk for the exact
// case of keys), on a small item
// and on plans of 100 and 1,000 items; walk and decode are now's two
// passes alone.
func BenchmarkDecode(b *testing.B) {
	bodies := []struct {
		name string
		body []byte
		into func() any
	}{
		{"Item", []byte(`{"title": "Write the docs", "body": "At length.", "priority": 3, "labels": ["docs"], "metadata": {"owner": "ann"}}`),
			func() any { return new(createItemRequest) }},
		{"Plan100", benchPlan(100), func() any { return new(planRequest) }},
		{"Plan1000", benchPlan(1000), func() any { return new(planRequest) }},
	}
	for _, bb := range bodies {
		if err := baselineDecode(bb.body, bb.into()); err != nil {
			b.Fatalf("%s: baseline: %v", bb.name, err)
		}
		if err := decodeBody(bb.body, bb.into()); err != nil {
			b.Fatalf("%s: %v", bb.name, err)
		}
		for _, impl := range []struct {
			name string
			f    func([]byte, any) error
		}{{"baseline", baselineDecode}, {"now", decodeBody},
			// The two parts of now: the walk of input.JSONInto, and
			// encoding/json's decode.
			{"walk", func(body []byte, v any) error { return input.JSONInto(body, reflect.TypeOf(v)) }},
			{"decode", func(body []byte, v any) error { return json.Unmarshal(body, v) }}} {
			b.Run(bb.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.f(bb.body, bb.into()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// baselineDecode is the decoding of a request body before it became one
// walk of the tokens and a decode: three passes.
func baselineDecode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, body)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wgerr.InvalidField("body", "trailing data after the JSON value")
	}
	if err := baselineJSON(body); err != nil {
		return err
	}
	return baselineExactKeys(reflect.TypeOf(v), body)
}

var baselineUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// baselineExactKeys refuses a key of an object decoded into a struct that names
// one of its fields only when case is ignored ("Title" for "title"), as
// an unknown field: encoding/json matches keys without regard to case, so
// {"title": "a", "TITLE": "b"} stored "b". raw was decoded into v's type t
// already (it is valid JSON of the right shapes). One pass over the
// tokens, following the types down; types that decode themselves, maps
// and raw values are not looked into.
func baselineExactKeys(t reflect.Type, raw []byte) error {
	type frame struct {
		fields  map[string]reflect.Type // a struct's; nil: not looked into
		elem    reflect.Type            // an array's element type; nil: not looked into
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	// path names the value being read, as input.JSON names it (built
	// only for an error: a path per value would cost the square of the
	// depth).
	path := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.object && b.Len() > 0:
				b.WriteString("." + f.key)
			case f.object:
				b.WriteString(f.key)
			default:
				if i == 0 {
					b.WriteString("body")
				}
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	done := func() {
		if len(stack) > 0 {
			if f := &stack[len(stack)-1]; f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end (decoding judged the syntax)
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '}' || tok == ']' {
				stack = stack[:len(stack)-1]
				done()
				continue
			}
			// The type of the value beginning here.
			vt := t
			if n := len(stack); n > 0 {
				if f := stack[n-1]; f.object {
					vt = f.fields[f.key]
				} else {
					vt = f.elem
				}
			}
			f := frame{object: tok == '{', wantKey: tok == '{'}
			for vt != nil && vt.Kind() == reflect.Pointer {
				vt = vt.Elem()
			}
			if vt != nil && !reflect.PointerTo(vt).Implements(baselineUnmarshalerType) {
				switch {
				case f.object && vt.Kind() == reflect.Struct:
					f.fields = baselineJSONFields(vt)
				case !f.object && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array) && vt.Elem().Kind() != reflect.Uint8:
					f.elem = vt.Elem()
				}
			}
			stack = append(stack, f)
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				f := &stack[n-1]
				f.key, f.wantKey = tok, false
				if f.fields != nil {
					if _, ok := f.fields[tok]; !ok {
						return wgerr.InvalidField(path(), "unknown field (field names are case-sensitive)")
					}
				}
				continue
			}
			done()
		default:
			done()
		}
	}
}

// baselineFieldsOf caches baselineJSONFields by type.
var baselineFieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// baselineJSONFields maps the JSON names of a struct's fields (those of embedded
// structs without a name of their own included) to their types.
func baselineJSONFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := baselineFieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := baselineStructFields(t)
	baselineFieldsOf.Store(t, m)
	return m
}

func baselineStructFields(t reflect.Type) map[string]reflect.Type {
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
				for k, v := range baselineStructFields(ft) {
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

// The text check of the baseline: input.JSON as it was, a walk of
// encoding/json's Decoder.Token.

const (
	baselineMaxIntDigits  = 131072
	baselineMaxFracDigits = 16383
)

func baselineJSON(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := baselineWalker{dec: dec}
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

// baselineWalker follows the path of the token being read.
type baselineWalker struct {
	dec   *json.Decoder
	stack []baselineFrame
}

// baselineFrame is one open object or array: the key of the value being read, or
// the index of the next element.
type baselineFrame struct {
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
func (w *baselineWalker) visit(tok json.Token, raw []byte) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{', '[':
			w.stack = append(w.stack, baselineFrame{object: t == '{', wantKey: t == '{'})
		default:
			w.stack = w.stack[:len(w.stack)-1]
			w.valueDone()
		}
		return nil
	case string:
		if top := w.top(); top != nil && top.object && top.wantKey {
			if problem := baselineRawStringProblem(raw); problem != "" {
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
		if problem := baselineRawStringProblem(raw); problem != "" {
			return wgerr.InvalidField(w.path(true), "%s", problem)
		}
	case json.Number:
		if problem := baselineNumberProblem(string(t)); problem != "" {
			return wgerr.InvalidField(w.path(true), "%s", problem)
		}
	}
	w.valueDone()
	return nil
}

func (w *baselineWalker) top() *baselineFrame {
	if len(w.stack) == 0 {
		return nil
	}
	return &w.stack[len(w.stack)-1]
}

// valueDone moves past a value just read.
func (w *baselineWalker) valueDone() {
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
func (w *baselineWalker) path(withLast bool) string {
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

// baselineRawStringProblem inspects the raw text of one JSON string token (which
// may be preceded by separators): its bytes, and the characters its \u
// escapes stand for.
func baselineRawStringProblem(raw []byte) string {
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
		r, ok := baselineHex4(raw[i+1:])
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
			lo, ok := baselineHex4(raw[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return "must not contain an unpaired surrogate escape"
			}
			i += 6
		}
	}
	return ""
}

func baselineHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// baselineNumberProblem refuses a JSON number PostgreSQL's numeric cannot hold (too
// many digits before or after the decimal point once the exponent applies).
func baselineNumberProblem(s string) string {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > baselineMaxIntDigits+baselineMaxFracDigits || e < -(baselineMaxIntDigits+baselineMaxFracDigits) {
			return "is a number out of range"
		}
		exp = e
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	if len(intPart)+exp > baselineMaxIntDigits || len(frac)-exp > baselineMaxFracDigits {
		return "is a number out of range"
	}
	return ""
}
