package attention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// rowsSent records how many rows each statement of a pool answered (its
// command tag), in the order sent.
type rowsSent struct {
	mu   sync.Mutex
	rows []int64
}

func (r *rowsSent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (r *rowsSent) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, d.CommandTag.RowsAffected())
}

func (r *rowsSent) take() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.rows
	r.rows = nil
	return out
}

// TestLatestOfItemsIsLatestOfEach: LatestOfItems answers, in one
// statement, for each item what Latest answers for it alone; the
// statement sends of an item of large requests only those within the
// byte budget and one more (not its limit+1 of 1 MiB each), and nothing
// of an item of another project.
func TestLatestOfItemsIsLatestOfEach(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	trace := &rowsSent{}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := setupOn(t, pool)
	other := setupOn(t, pool)
	const limit = 20

	large, small, none := f.item(t, "large"), f.item(t, "small"), f.item(t, "none")
	doc, _ := json.Marshal(map[string]string{"doc": strings.Repeat("x", 1<<20)})
	for i := range 10 {
		in := ask(fmt.Sprintf("large %d", i), false)
		in.Context = doc
		f.mustOpen(t, large, in)
	}
	for i := range limit + 5 {
		f.mustOpen(t, small, ask(fmt.Sprintf("small %d", i), false))
	}
	elsewhere := other.item(t, "elsewhere")
	other.mustOpen(t, elsewhere, ask("not yours", false))
	svc := attention.NewService(pool, f.clock, attention.Config{})

	items := []uuid.UUID{large, small, none, elsewhere}
	trace.take()
	got, err := svc.LatestOfItems(f.ctx, f.project, items, limit)
	if err != nil {
		t.Fatal(err)
	}
	sent := trace.take()
	// 3 large requests fit in the budget, the 4th passes it; 21 small ones.
	if len(sent) != 1 || sent[0] > 4+limit+1 {
		t.Errorf("LatestOfItems sent %v rows in %d statements, want one statement of at most %d rows", sent, len(sent), 4+limit+1)
	}
	for _, id := range items {
		want, err := svc.Latest(f.ctx, f.project, id, "", limit)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := got[id]
		if !ok || fmt.Sprint(seqs(h.Requests)) != fmt.Sprint(seqs(want.Requests)) || h.Older != want.Older {
			t.Errorf("item %s: %v (older %q), Latest answers %v (older %q)", id, seqs(h.Requests), h.Older, seqs(want.Requests), want.Older)
		}
	}
	if n := len(got[large].Requests); n != 3 || got[large].Older == "" {
		t.Errorf("large: %d requests (older %q), want 3 and older ones", n, got[large].Older)
	}
	if len(got[elsewhere].Requests) != 0 || got[elsewhere].Requests == nil {
		t.Errorf("an item of another project: %v, want an empty history", got[elsewhere].Requests)
	}

	t.Run("ErrLimit", func(t *testing.T) {
		for _, n := range []int{0, attention.MaxLatestOfItems + 1} {
			if _, err := svc.LatestOfItems(f.ctx, f.project, items, n); wgerr.CodeOf(err) != wgerr.CodeInvalid {
				t.Errorf("limit %d: %v, want invalid_argument", n, err)
			}
		}
	})
}

func seqs(rs []attention.Request) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}
