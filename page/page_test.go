package page

import (
	"errors"
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
