package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzScanner: on every valid JSON document the scanner reads the tokens
// encoding/json's Decoder.Token reads, of the same kinds and texts, and
// ends where the document does.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `-0.5e+10`, `{"a": [1, "b", {"c": null}], "d": true, "e": false}`,
		`{"k\"ey": "v\\u0000\u00e9", "n": [0, -1, 2.25, 3E-2]}`, " [ \t\n1 , 2 ] ", `[[[[]]],{}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		sc := scanner{doc: doc}
		for {
			tok, err := dec.Token()
			kind, start, end := sc.next()
			if errors.Is(err, io.EOF) {
				if kind != tokEnd {
					t.Fatalf("%q: the scanner read %q after the end", doc, doc[start:end])
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: the decoder: %v on a valid document", doc, err)
			}
			var want tokKind
			switch v := tok.(type) {
			case json.Delim:
				want = map[json.Delim]tokKind{'{': tokOpenObject, '[': tokOpenArray, '}': tokClose, ']': tokClose}[v]
			case string:
				want = tokString
				var got string
				if json.Unmarshal(doc[start:end], &got) != nil || got != v {
					t.Fatalf("%q: string token %q, the decoder read %q", doc, doc[start:end], v)
				}
			case json.Number:
				want = tokNumber
				if string(doc[start:end]) != string(v) {
					t.Fatalf("%q: number token %q, the decoder read %q", doc, doc[start:end], v)
				}
			case bool:
				want = tokBool
			case nil:
				want = tokNull
			}
			if kind != want {
				t.Fatalf("%q: token %q of kind %d, the decoder read %v", doc, doc[start:end], kind, tok)
			}
		}
	})
}
