package page

import (
	"errors"
	"testing"
)

// TestRead: Read asks for chunks that continue after the last row read,
// returns limit+1 rows when the list has them and they fit, stops at the
// end of the list, and stops as soon as a row overruns the budget, so it
// never reads more than the page and the chunk that overran it.
func TestRead(t *testing.T) {
	t.Parallel()
	// list is a list of n rows (their sequence numbers 1..n) of the given
	// size; the read records the chunks asked for.
	type chunk struct{ after, n int }
	list := func(n int, size func(seq int) int) (func(last *int, k int) ([]int, error), *[]chunk, func(int) int) {
		var asked []chunk
		return func(last *int, k int) ([]int, error) {
			after := 0
			if last != nil {
				after = *last
			}
			asked = append(asked, chunk{after, k})
			var out []int
			for seq := after + 1; seq <= n && len(out) < k; seq++ {
				out = append(out, seq)
			}
			return out, nil
		}, &asked, size
	}
	small := func(int) int { return 1 << 10 }
	for _, tc := range []struct {
		name      string
		rows      int
		size      func(int) int
		limit     int
		wantRows  int
		maxChunks int // at most this many reads
		maxRead   int // at most this many rows read in all
	}{
		{name: "OneChunk", rows: 100, size: small, limit: 10, wantRows: 11, maxChunks: 1, maxRead: 11},
		{name: "EndOfList", rows: 30, size: small, limit: 500, wantRows: 30, maxRead: FirstChunk + ChunkRows},
		{name: "ManyChunks", rows: 1000, size: small, limit: Max, wantRows: Max + 1, maxRead: Max + 1},
		{name: "BudgetInFirstChunk", rows: 1000, size: func(int) int { return 2 << 20 }, limit: Max, wantRows: 3, maxChunks: 1, maxRead: FirstChunk},
		{name: "OneRowOverBudget", rows: 1000, size: func(int) int { return 5 << 20 }, limit: Max, wantRows: 2, maxChunks: 1, maxRead: FirstChunk},
		// Small rows first, then large ones: the chunk that meets the
		// large ones is at most ChunkRows rows.
		{name: "LargeAfterSmall", rows: 1000, size: func(seq int) int {
			if seq > 40 {
				return 3 << 20
			}
			return 1 << 10
		}, limit: Max, wantRows: 42, maxRead: 40 + ChunkRows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			read, asked, size := list(tc.rows, tc.size)
			rows, err := Read(tc.limit, read, size)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != tc.wantRows {
				t.Fatalf("%d rows, want %d (chunks %v)", len(rows), tc.wantRows, *asked)
			}
			for i, seq := range rows {
				if seq != i+1 {
					t.Fatalf("row %d is %d: a row skipped or repeated (chunks %v)", i, seq, *asked)
				}
			}
			total, next := 0, 0
			for i, c := range *asked {
				if c.after != next {
					t.Fatalf("chunk %d continues after %d, want after %d, the last row read", i, c.after, next)
				}
				if (i == 0 && c.n > FirstChunk) || c.n > ChunkRows || c.n < 1 {
					t.Fatalf("chunk %d asks for %d rows", i, c.n)
				}
				total += c.n
				next = min(c.after+c.n, tc.rows)
			}
			if tc.maxChunks > 0 && len(*asked) > tc.maxChunks {
				t.Errorf("%d reads (%v), want at most %d", len(*asked), *asked, tc.maxChunks)
			}
			if total > tc.maxRead {
				t.Errorf("asked for %d rows in all (%v), want at most %d", total, *asked, tc.maxRead)
			}
			if n := Fit(len(rows), func(i int) int { return size(rows[i]) }); len(rows) <= tc.limit && n == len(rows) && len(rows) < tc.rows {
				t.Errorf("stopped after %d rows that all fit, before the list's end", len(rows))
			}
		})
	}
	t.Run("Err", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		calls := 0
		_, err := Read(Max, func(last *int, n int) ([]int, error) {
			calls++
			if calls == 2 {
				return nil, boom
			}
			out := make([]int, n)
			for i := range out {
				out[i] = i + 1
			}
			return out, nil
		}, func(int) int { return 1 })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the read's", err)
		}
	})
}
