package page

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestLimit(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{0: Default, 1: 1, Max: Max} {
		if got, err := Limit(in); err != nil || got != want {
			t.Errorf("Limit(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []int{-1, Max + 1} {
		if _, err := Limit(in); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("Limit(%d): %v, want invalid_argument", in, err)
		}
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		if seq, err := Decode("items", Encode("items", 42)); err != nil || seq != 42 {
			t.Fatalf("round trip: %d, %v", seq, err)
		}
		if seq, err := Decode("items", ""); err != nil || seq != 0 {
			t.Fatalf("empty cursor: %d, %v", seq, err)
		}
	})
	t.Run("ErrOtherList", func(t *testing.T) {
		if _, err := Decode("leases", Encode("items", 42)); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("a cursor of another list: %v", err)
		}
	})
	t.Run("ErrGarbage", func(t *testing.T) {
		for _, c := range []string{"!!", "bm90LWEtY3Vyc29y", Encode("items", -1)} {
			if _, err := Decode("items", c); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%q: %v", c, err)
			}
		}
	})
}

func TestCut(t *testing.T) {
	t.Parallel()
	seq := func(r int64) int64 { return r }
	t.Run("OK", func(t *testing.T) {
		rows, next := Cut("items", []int64{4, 5, 6}, 2, seq)
		if len(rows) != 2 || rows[1] != 5 {
			t.Fatalf("rows %v, want [4 5]", rows)
		}
		if after, err := Decode("items", next); err != nil || after != 5 {
			t.Fatalf("next cursor: %d, %v; want after 5", after, err)
		}
	})
	t.Run("LastPage", func(t *testing.T) {
		rows, next := Cut("items", []int64{4, 5}, 2, seq)
		if len(rows) != 2 || next != "" {
			t.Fatalf("rows %v, next %q; want both rows and no cursor", rows, next)
		}
	})
}

func TestEncodeKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for _, tc := range [][2]int64{{0, 1}, {-5, 42}, {1 << 60, -(1 << 40)}} {
			k, s, ok, err := DecodeKey("items-priority", EncodeKey("items-priority", tc[0], tc[1]))
			if err != nil || !ok || k != tc[0] || s != tc[1] {
				t.Errorf("round trip of %v = %d, %d, %v, %v", tc, k, s, ok, err)
			}
		}
		if _, _, ok, err := DecodeKey("items-priority", ""); ok || err != nil {
			t.Errorf("empty cursor = %v, %v; want the start", ok, err)
		}
	})
	t.Run("ErrOtherList", func(t *testing.T) {
		for _, c := range []string{EncodeKey("items-updated", 1, 2), Encode("items-priority", 2), Encode("items", 2), "!!"} {
			if _, _, _, err := DecodeKey("items-priority", c); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("DecodeKey(%q) = %v, want invalid_argument", c, err)
			}
		}
	})
}

func TestAfter(t *testing.T) {
	key, seq, err := After("l", "")
	if err != nil || key != math.MinInt64 || seq != math.MinInt64 {
		t.Fatalf("After of the first page = %d, %d, %v; want the smallest int64s", key, seq, err)
	}
	if key, seq, err = After("l", EncodeKey("l", -5, 7)); err != nil || key != -5 || seq != 7 {
		t.Fatalf("After of a cursor = %d, %d, %v; want -5, 7", key, seq, err)
	}
	if _, _, err = After("other", EncodeKey("l", -5, 7)); err == nil {
		t.Fatalf("After took another list's cursor")
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for name, tc := range map[string]struct {
		sizes []int
		want  int
	}{
		"Empty":         {nil, 0},
		"AllFit":        {[]int{1, 2, 3}, 3},
		"Exactly":       {[]int{MaxBytes / 2, MaxBytes / 2, 1}, 2},
		"CutEarly":      {[]int{3 * mib, 3 * mib, 1}, 1},
		"OneHugeFirst":  {[]int{100 * mib, 1, 1}, 1},
		"HugeAfterFew":  {[]int{1, 1, 100 * mib}, 2},
		"ManySmallRows": {make([]int, 10_000), 10_000},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := Fit(len(tc.sizes), func(i int) int { return tc.sizes[i] }); got != tc.want {
				t.Fatalf("Fit(%v) = %d, want %d", tc.sizes, got, tc.want)
			}
		})
	}
}

func TestTextCursor(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"w1", "laptop:2", "ünïcode worker"} {
		got, ok, err := DecodeText("workers", EncodeText("workers", key))
		if err != nil || !ok || got != key {
			t.Errorf("DecodeText(EncodeText(%q)) = %q, %v, %v", key, got, ok, err)
		}
	}
	if key, ok, err := DecodeText("workers", ""); err != nil || ok || key != "" {
		t.Errorf("the empty cursor: %q, %v, %v; want the start", key, ok, err)
	}
	for _, c := range []string{"bogus!", EncodeText("items", "w1"), EncodeText("workers", ""), EncodeText("workers", "a\x00b"), Encode("workers", 5)[:3]} {
		if _, _, err := DecodeText("workers", c); wgerr.CodeOf(err) != wgerr.CodeInvalid {
			t.Errorf("DecodeText(%q) = %v, want invalid_argument", c, err)
		}
	}
}

// TestTextSize: TextSize is exactly the length of the text as
// encoding/json writes it (the API's answers), escapes included, for
// texts of every kind of character, invalid UTF-8 too.
func TestTextSize(t *testing.T) {
	t.Parallel()
	texts := []string{"", "plain", `"quoted" \ back`, "<script>&amp;</script>", "\x00\x01\x1f\b\f\n\r\t\x7f",
		"é中😀", "\u2028\u2029", "\xff\xfe", "a\xe2\x80", "\xe2\x80\xa8x", strings.Repeat("<", 1000)}
	const alphabet = "\x00\x1f\"\\<>&a\xe2\x80\xa8\xa9\xc3\xa9\xf0\x9f\x98\x80\xff"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			// Mostly the interesting bytes: ASCII controls and
			// escapes, and the bytes of multi-byte runes.
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := TextSize(s); got != len(want) {
			t.Fatalf("TextSize(%q) = %d, want %d (%s)", s, got, len(want), want)
		}
	}
}

// TestJSONSize: JSONSize is never less than the length encoding/json
// writes for a JSON value as PostgreSQL returns a jsonb (HTML characters
// and U+2028 escaped by the encoder), and no more than the value's own
// length plus its escapes.
func TestJSONSize(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{}`, `{"a": 1, "b": [true, null]}`, `{"x": "<<<&&&>>>"}`, `"\u0001\n\"\\"`,
		"{\"l\": \"\u2028\u2029\", \"e\": \"é中😀\"}", `["<", {"&": ">"}]`, `{"k": "` + strings.Repeat("<&>", 1000) + `"}`} {
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := JSONSize([]byte(raw)); got < len(want) || got > len(raw)+5*strings.Count(raw, "<")+5*strings.Count(raw, ">")+5*strings.Count(raw, "&")+3*strings.Count(raw, "\u2028")+3*strings.Count(raw, "\u2029") {
			t.Fatalf("JSONSize(%s) = %d; encoded: %d bytes", raw, got, len(want))
		}
	}
}
