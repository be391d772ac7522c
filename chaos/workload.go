package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// workload is one scenario's clients: workers, the item producer, the
// person answering questions, and the stale replayer.
type workload struct {
	c       *caller
	rec     *recorder
	project string
	ttl     int
	seed    uint64

	grants    grants
	completed atomic.Int64
	created   atomic.Int64
	holders   [3]atomic.Int64 // live leases per replica the worker is pinned to
}

// grants remembers every acknowledged claim, per item, for the stale
// replayer.
type grants struct {
	mu     sync.Mutex
	byItem map[string][]grant
	items  []string
}

type grant struct {
	lease string
	epoch int64
}

func (g *grants) add(item, lease string, epoch int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byItem == nil {
		g.byItem = map[string][]grant{}
	}
	if len(g.byItem[item]) == 0 {
		g.items = append(g.items, item)
	}
	g.byItem[item] = append(g.byItem[item], grant{lease, epoch})
}

// pick returns an item and its grants (a copy), at random.
func (g *grants) pick(rng *rand.Rand) (string, []grant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.items) == 0 {
		return "", nil
	}
	it := g.items[rng.IntN(len(g.items))]
	return it, append([]grant(nil), g.byItem[it]...)
}

type leaseJSON struct {
	ID        string    `json:"id"`
	Epoch     int64     `json:"epoch"`
	ExpiresAt time.Time `json:"expires_at"`
}

type claimAnswer struct {
	Lease leaseJSON `json:"lease"`
	Item  struct {
		ID string `json:"id"`
	} `json:"item"`
}

// worker claims, heartbeats and ends leases on its replica.
func (w *workload) worker(ctx context.Context, idx int) {
	rng := rand.New(rand.NewPCG(w.seed, uint64(idx)+1))
	name := fmt.Sprintf("worker-%d", idx)
	replica := idx % len(w.c.replicas)
	for ctx.Err() == nil {
		op := check.Op{Worker: name, Kind: check.OpClaim, Key: newKey(), TTL: w.ttl}
		var ans claimAnswer
		status := w.c.call(ctx, rng, replica, &op, http.MethodPost, "/v1/projects/"+w.project+"/claims",
			map[string]any{"worker": name, "lease_seconds": w.ttl}, &ans)
		if op.Answer == check.Acked && status == http.StatusCreated {
			op.Item, op.GotLease, op.GotEpoch, op.GotExpires = ans.Item.ID, ans.Lease.ID, ans.Lease.Epoch, ans.Lease.ExpiresAt
		}
		w.rec.add(op)
		if op.Answer != check.Acked || op.GotLease == "" {
			sleep(ctx, time.Duration(50+rng.IntN(150))*time.Millisecond)
			continue
		}
		w.grants.add(op.Item, op.GotLease, op.GotEpoch)
		w.holders[replica].Add(1)
		w.hold(ctx, rng, name, replica, op.Item, op.GotLease, op.GotEpoch)
		w.holders[replica].Add(-1)
	}
}

// hold works on one lease: some workers go silent (the lease expires), the
// others heartbeat a few times and end it.
func (w *workload) hold(ctx context.Context, rng *rand.Rand, name string, replica int, item, lease string, epoch int64) {
	if rng.IntN(10) == 0 {
		return // silent: the lease expires
	}
	ttl := time.Duration(w.ttl) * time.Second
	n := rng.IntN(4)
	if rng.IntN(12) == 0 {
		// Late: the worker stalls past its lease, then reports as if
		// nothing happened; the fence must refuse it.
		if !sleep(ctx, lateStall(rng, ttl)) {
			return
		}
		n = rng.IntN(2)
	}
	for i := 0; i < n; i++ {
		if !sleep(ctx, ttl/5+time.Duration(rng.Int64N(int64(ttl/5)))) {
			return
		}
		op := check.Op{Worker: name, Kind: check.OpHeartbeat, Key: newKey(), Item: item, Lease: lease, Epoch: epoch}
		var ans struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		w.c.call(ctx, rng, replica, &op, http.MethodPost, "/v1/leases/"+lease+"/heartbeat",
			map[string]any{"epoch": epoch, "progress": map[string]int{"step": i}}, &ans)
		op.GotExpires = ans.ExpiresAt
		w.rec.add(op)
		if op.Answer != check.Acked {
			return
		}
	}
	op := check.Op{Worker: name, Key: newKey(), Item: item, Lease: lease, Epoch: epoch}
	var body map[string]any
	switch r := rng.IntN(100); {
	case r < 60:
		op.Kind = check.OpComplete
		op.Result = fmt.Sprintf(`{"by":%q,"epoch":%d}`, name, epoch)
		body = map[string]any{"epoch": epoch, "result": map[string]any{"by": name, "epoch": epoch}}
	case r < 72:
		op.Kind = check.OpRelease
		body = map[string]any{"epoch": epoch, "reason": "chaos"}
	case r < 82:
		op.Kind = check.OpFail
		body = map[string]any{"epoch": epoch, "error": "chaos failure"}
	default:
		op.Kind = check.OpAsk
		body = map[string]any{"epoch": epoch, "question": "go on?"}
	}
	var ans struct {
		Replayed bool `json:"replayed"`
	}
	w.c.call(ctx, rng, replica, &op, http.MethodPost, "/v1/leases/"+lease+"/"+map[string]string{
		check.OpComplete: "complete", check.OpRelease: "release", check.OpFail: "fail", check.OpAsk: "attention",
	}[op.Kind], body, &ans)
	op.Replayed = ans.Replayed
	if op.Kind == check.OpComplete && op.Answer == check.Acked {
		w.completed.Add(1)
	}
	w.rec.add(op)
}

// lateStall is how long a late holder of a lease of ttl stalls, as if
// paused: half the time just past its lease (20-320 ms: the report races
// the expiry, and the fence's expiry predicate must refuse it), half the
// time past twice its lease (as the paused lease holder of issue 13: the
// item has usually been claimed again, and the epoch must refuse it).
func lateStall(rng *rand.Rand, ttl time.Duration) time.Duration {
	past := time.Duration(20+rng.IntN(300)) * time.Millisecond
	if rng.IntN(2) == 0 {
		return ttl + past
	}
	return 2*ttl + past
}

// producer keeps a backlog of items; a quarter depend on a recent one.
func (w *workload) producer(ctx context.Context, backlog int) {
	rng := rand.New(rand.NewPCG(w.seed, 1000))
	var recent []string
	for ctx.Err() == nil {
		if w.created.Load()-w.completed.Load() >= int64(backlog) {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		body := map[string]any{"title": fmt.Sprintf("chaos item %d", w.created.Load()+1), "priority": rng.IntN(3)}
		if len(recent) > 0 && rng.IntN(4) == 0 {
			body["depends_on"] = []string{recent[rng.IntN(len(recent))]}
		}
		op := check.Op{Worker: "producer", Kind: check.OpCreate, Key: newKey()}
		var ans struct {
			ID string `json:"id"`
		}
		w.c.call(ctx, rng, rng.IntN(len(w.c.replicas)), &op, http.MethodPost, "/v1/projects/"+w.project+"/items", body, &ans)
		op.Item = ans.ID
		w.rec.add(op)
		if op.Answer == check.Acked {
			w.created.Add(1)
			recent = append(recent, ans.ID)
			if len(recent) > 10 {
				recent = recent[1:]
			}
		} else if op.Answer == check.Unknown {
			// It may exist; count it so the backlog stays bounded.
			w.created.Add(1)
		}
	}
}

// person answers every open attention request.
func (w *workload) person(ctx context.Context) {
	rng := rand.New(rand.NewPCG(w.seed, 2000))
	for sleep(ctx, 300*time.Millisecond) {
		op := check.Op{Worker: "person", Kind: check.OpList}
		var page struct {
			Attention []struct {
				ID string `json:"id"`
			} `json:"attention"`
		}
		w.c.call(ctx, rng, rng.IntN(len(w.c.replicas)), &op, http.MethodGet, "/v1/projects/"+w.project+"/attention?state=open&limit=100", nil, &page)
		w.rec.add(op)
		for _, a := range page.Attention {
			op := check.Op{Worker: "person", Kind: check.OpResolve, Key: newKey()}
			w.c.call(ctx, rng, rng.IntN(len(w.c.replicas)), &op, http.MethodPost, "/v1/attention/"+a.ID+"/resolve", map[string]any{"answer": "yes, go on"}, nil)
			w.rec.add(op)
		}
	}
}

// replayer sends stale mutations on purpose: an old lease and epoch after
// the item was claimed again, and the current lease with a wrong epoch.
// Each must be refused.
func (w *workload) replayer(ctx context.Context) {
	rng := rand.New(rand.NewPCG(w.seed, 3000))
	kinds := []string{check.OpHeartbeat, check.OpComplete, check.OpRelease, check.OpFail}
	paths := map[string]string{check.OpHeartbeat: "heartbeat", check.OpComplete: "complete", check.OpRelease: "release", check.OpFail: "fail"}
	for sleep(ctx, time.Duration(80+rng.IntN(80))*time.Millisecond) {
		item, gs := w.grants.pick(rng)
		if item == "" {
			continue
		}
		var g grant
		epoch := int64(0)
		if len(gs) >= 2 && rng.IntN(3) != 0 {
			g = gs[rng.IntN(len(gs)-1)] // superseded by a later claim
			epoch = g.epoch
		} else {
			g = gs[len(gs)-1]
			epoch = g.epoch + 1 + int64(rng.IntN(2))*-2 // wrong epoch: +1 or -1
			if epoch < 1 {
				epoch = g.epoch + 1
			}
		}
		kind := kinds[rng.IntN(len(kinds))]
		op := check.Op{Worker: "replayer", Kind: kind, Key: newKey(), Stale: true, Item: item, Lease: g.lease, Epoch: epoch}
		body := map[string]any{"epoch": epoch}
		if kind == check.OpComplete {
			op.Result = `{"stale":true}`
			body["result"] = map[string]any{"stale": true}
		}
		var ans struct {
			Replayed bool `json:"replayed"`
		}
		w.c.call(ctx, rng, rng.IntN(len(w.c.replicas)), &op, http.MethodPost, "/v1/leases/"+g.lease+"/"+paths[kind], body, &ans)
		op.Replayed = ans.Replayed
		w.rec.add(op)
	}
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
