package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// BenchmarkClaimComplete measures claim+complete throughput of N workers
// against one database (the database clock decides, as in production):
//
//	go test ./lease -run '^$' -bench ClaimComplete -benchtime 2000x
//
// The commit=async variants turn synchronous_commit off for the benchmark's
// connections, to separate the cost of the statements from the cost of
// flushing the WAL at each commit (two commits per item).
func BenchmarkClaimComplete(b *testing.B) {
	for _, commit := range []string{"sync", "async"} {
		for _, workers := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("commit=%s/workers=%d", commit, workers), func(b *testing.B) {
				benchClaimComplete(b, workers, commit == "async")
			})
		}
	}
}

func benchClaimComplete(b *testing.B, workers int, async bool) {
	ctx := context.Background()
	// A test database commits asynchronously (dbtest); the sync variant
	// turns that back on for its sessions. dbtest URLs carry a query already.
	commit := "on"
	if async {
		commit = "off"
	}
	url := dbtest.URL(b) + "&synchronous_commit=" + commit
	pool, err := db.Open(ctx, url, 20)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	p, err := graph.NewService(pool, nil).CreateProject(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO items (project_id, title, priority, created_by)
				SELECT $1, 'item ' || g, g % 10, 'bench' FROM generate_series(1, $2) g`, p.ID, b.N)
	if err != nil {
		b.Fatal(err)
	}
	svc := lease.NewService(pool, nil, lease.Config{})
	result := json.RawMessage(`{"ok":true}`)
	var done atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := lease.ClaimRequest{Worker: fmt.Sprintf("w%d", w)}
			for done.Load() < int64(b.N) {
				c, err := svc.Claim(ctx, p.ID, req)
				if err == lease.ErrNothingReady {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := svc.Complete(ctx, p.ID, fence(c.Lease), result, nil); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(done.Load())/elapsed.Seconds(), "items/s")
}
