package attention_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// statements records the SQL a pool's connections send.
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sql
	s.sql = nil
	return out
}

// TestLatestForAClaimIsOneStatement: the claim's history (Latest with
// lease.ClaimHistory, 20) is read on the claim's path by one statement,
// with no transaction around it, however many requests the item has: read
// in chunks inside a repeatable-read transaction of its own, it cost the
// claim of an item with a history four round trips (BEGIN, two chunks,
// COMMIT) where one statement reads the same. A long page is still read in
// chunks, in one transaction.
func TestLatestForAClaimIsOneStatement(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	trace := &statements{}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := setupOn(t, pool)
	item := f.item(t, "chatty")
	for range 30 {
		f.mustOpen(t, item, ask("q", false))
	}
	svc := attention.NewService(pool, f.clock, attention.Config{})

	trace.take()
	h, err := svc.Latest(f.ctx, f.project, item, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Requests) != 20 || h.Older == "" {
		t.Fatalf("Latest(20): %d requests (older %q), want 20 and older ones", len(h.Requests), h.Older)
	}
	if sent := trace.take(); len(sent) != 1 {
		t.Errorf("Latest(20) sent %d statements, want 1:\n%s", len(sent), strings.Join(sent, "\n---\n"))
	}

	if _, err := svc.Latest(f.ctx, f.project, item, "", 100); err != nil {
		t.Fatal(err)
	}
	sent := strings.Join(trace.take(), "\n")
	if !strings.Contains(strings.ToLower(sent), "begin") {
		t.Errorf("Latest(100) read without a transaction of its own:\n%s", sent)
	}
}
