package input_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, field string // field "": accepted
	}{
		{"OK", `{"a": "b", "n": [1, 2.5, -3e10], "o": {"k": null}}`, ""},
		{"EscapesOK", `{"a": "\u00e9 \ud83d\ude00 \\u0000 \"q\""}`, ""},
		{"BigNumbersOK", `[1e131071, 1e-16383, 123456789012345678901234567890]`, ""},
		{"NULValue", `{"a": "x\u0000"}`, "a"},
		{"NULKey", `{"a": {"\u0000": 1}}`, "a"},
		{"NULTopKey", `{"\u0000": 1}`, "body"},
		{"NULInArray", `{"a": [1, "ok", {"b": ["\u0000"]}]}`, "a[2].b[0]"},
		{"NULTopArray", `["ok", "\u0000"]`, "body[1]"},
		{"NULTopString", `"\u0000"`, "body"},
		{"BadUTF8", "{\"a\": \"\xff\"}", "a"},
		{"BadUTF8Key", "{\"a\": {\"\xc3\x28\": 1}}", "a"},
		{"HighSurrogateAlone", `{"a": "\ud800x"}`, "a"},
		{"HighSurrogateThenOther", `{"a": "\ud800\u0041"}`, "a"},
		{"HighSurrogateAtEnd", `{"a": "\ud800"}`, "a"},
		{"LowSurrogateAlone", `{"a": "\udc00"}`, "a"},
		{"HugeNumber", `{"a": 1e131072}`, "a"},
		{"HugeExponent", `{"a": 1e99999999999999999999}`, "a"},
		{"TinyNumber", `{"a": 1e-16384}`, "a"},
		{"LongFraction", `{"a": 0.` + strings.Repeat("1", 16384) + `}`, "a"},
		{"ZeroTinyExponent", `{"a": 0e-100000}`, "a"},
		{"AfterValuesInObject", `{"x": 1, "y": [true], "z": "\u0000"}`, "z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !json.Valid([]byte(tc.doc)) {
				t.Fatalf("test document is not JSON: %s", tc.doc)
			}
			err := input.JSON([]byte(tc.doc))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != tc.field {
				t.Fatalf("err %v (%#v), want invalid_argument on %q", err, we, tc.field)
			}
		})
	}
}

// TestJSONInto: the shape checks of a body decoded into a Go type, in the
// same walk as the text checks.
func TestJSONInto(t *testing.T) {
	t.Parallel()
	type inner struct {
		N int `json:"n"`
	}
	type doc struct {
		Title  *string         `json:"title"`
		Tags   []string        `json:"tags"`
		Inner  *inner          `json:"inner"`
		List   []inner         `json:"list"`
		Raw    json.RawMessage `json:"raw"`
		Any    any             `json:"any"`
		Free   map[string]int  `json:"free"`
		hidden int
	}
	into := reflect.TypeFor[*doc]()
	for _, tc := range []struct {
		name, doc, field string // field "": accepted
	}{
		{"OK", `{"title": "t", "tags": ["a"], "inner": {"n": 1}, "list": [{"n": 2}], "raw": null, "any": null, "free": {"x": 1}}`, ""},
		{"RawIsNotLookedInto", `{"raw": {"bogus": null}}`, ""},
		{"MapIsNotLookedInto", `{"free": {"Bogus": 1}}`, ""},
		{"TrailingIsTheDecodersConcern", `{"title": "t"} {"bogus": 1}`, ""},
		{"Unknown", `{"bogus": 1}`, "bogus"},
		{"UnknownDeep", `{"list": [{"n": 1}, {"m": 1}]}`, "list[1].m"},
		{"UnknownInPointer", `{"inner": {"x": 1}}`, "inner.x"},
		{"Case", `{"Title": "t"}`, "Title"},
		{"Unexported", `{"hidden": 1}`, "hidden"},
		{"NullPointer", `{"title": null}`, "title"},
		{"NullSlice", `{"tags": null}`, "tags"},
		{"NullElement", `{"tags": ["a", null]}`, "tags[1]"},
		{"NullStructField", `{"list": [{"n": null}]}`, "list[0].n"},
		{"NullBody", `null`, "body"},
		{"TwiceStillFirst", `{"title": "a", "title": null}`, "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := input.JSONInto([]byte(tc.doc), into)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != tc.field {
				t.Fatalf("err %v (%#v), want invalid_argument on %q", err, we, tc.field)
			}
		})
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "caf\u00e9", "\U0001F600", "tab\tnewline\n"} {
		if err := input.Text("f", s); err != nil {
			t.Errorf("Text(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"a\x00b", "\xff", "\xed\xa0\x80", "\xc0\xaf"} {
		if err := input.Text("f", s); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("Text(%q) = %v, want invalid_argument", s, err)
		}
	}
	if err := input.Values(map[string][]string{"q": {"ok", "a\x00"}}); err == nil || !strings.HasPrefix(err.Error(), "q:") {
		t.Errorf("Values: %v, want an error naming q", err)
	}
}

// FuzzStorable: whatever the checks accept, PostgreSQL stores (text as
// text, a JSON document as jsonb); so a value passing them can never turn
// into a database error (a 500) later.
func FuzzStorable(f *testing.F) {
	pool := dbtest.New(f)
	for _, s := range []string{"", "a", "a\x00b", "\xff", `{"a": "\u0000"}`, `["\ud800"]`, `1e131071`, `1e131072`,
		`0.000001e-16377`, `{"a": [1, {"b": "\ud83d\ude00"}]}`, `-0e-99999`, `1.5E+3`, `"\\u0000"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if input.Text("f", s) == nil {
			if _, err := pool.Exec(ctx, "SELECT $1::text", s); err != nil {
				t.Fatalf("text %q passed the check but PostgreSQL refused it: %v", s, err)
			}
		}
		if json.Valid([]byte(s)) && input.JSON([]byte(s)) == nil {
			if _, err := pool.Exec(ctx, "SELECT $1::text::jsonb", s); err != nil {
				t.Fatalf("JSON %q passed the check but PostgreSQL refused it: %v", s, err)
			}
		}
	})
}

// TestLineAndProse: what a single-line and a multi-line text refuse, and
// what they keep.
func TestLineAndProse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s           string
		line, prose bool // accepted
	}{
		{"plain", true, true},
		{"café 日本語 میخواهم", true, true},
		{"family 👨\u200d👩\u200d👧, ✔\ufe0f", true, true}, // joiner, variation selector
		{"a\u200cb", true, true},                        // zero-width non-joiner
		{"a\tb", false, true},
		{"a\nb\r\nc", false, true},
		{"a\u2028b", false, true},
		{"soft\u00adhyphen", false, true},
		{"zero\u200bwidth", false, true},
		{"\ufeffbom", false, true},
		{"a\x1b[31mb", false, false},
		{"a\x7fb", false, false},
		{"a\u0085b", false, false},
		{"invoice\u202efdp.exe", false, false},
		{"a\u2066b\u2069", false, false},
		{"a\u200fb", false, false},
		{"a\u061cb", false, false},
		{"tag\U000E0041", false, false},
		{"nul\x00", false, false},
		{"\xff", false, false},
	} {
		if err := input.Line("f", tc.s); (err == nil) != tc.line || err != nil && !errors.Is(err, wgerr.Invalid) {
			t.Errorf("Line(%q) = %v, want accepted %v", tc.s, err, tc.line)
		}
		if err := input.Prose("f", tc.s); (err == nil) != tc.prose || err != nil && !errors.Is(err, wgerr.Invalid) {
			t.Errorf("Prose(%q) = %v, want accepted %v", tc.s, err, tc.prose)
		}
	}
	err := input.Line("title", "ab\u202ec")
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Field != "title" || !strings.Contains(we.Message, "U+202E") || !strings.Contains(we.Message, "character 3") {
		t.Fatalf("Line: %v, want the field, the character and where it is", err)
	}
}
