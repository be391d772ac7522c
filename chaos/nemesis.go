package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// The fault kinds the nemesis draws from.
const (
	faultKill      = "kill"       // kill -9 of a replica, then a restart
	faultTerminate = "terminate"  // pg_terminate_backend of the servers' connections
	faultPGRestart = "pg-restart" // pg_ctl restart -m fast
	faultDelay     = "link-delay" // the proxied link delays every chunk
	faultStall     = "link-stall" // the proxied link holds all data
	faultCut       = "link-cut"   // the proxied link is cut and refuses connections
	faultPause     = "pause"      // SIGSTOP of a replica serving lease holders, past twice the lease
)

var faultKinds = []string{faultKill, faultTerminate, faultPGRestart, faultDelay, faultStall, faultCut, faultPause}

// nemesis injects faults drawn by rng from kinds (in rounds: faultDeck)
// until the deadline, one at a time: inject, remove, wait until every replica is ready again (the
// fault's Healed), take a snapshot of the ended leases, rest, repeat.
func (s *suite) nemesis(ctx context.Context, rng *rand.Rand, kinds []string, until time.Time, w *workload, project string) ([]check.Fault, []map[string]check.Ended) {
	var faults []check.Fault
	var snaps []map[string]check.Ended
	deck := newFaultDeck(rng, kinds)
	for {
		rest := time.Duration(800+rng.IntN(1700)) * time.Millisecond
		if !sleep(ctx, rest) || time.Now().Add(time.Second).After(until) {
			return faults, snaps
		}
		kind := deck.next()
		f, err := s.inject(ctx, rng, kind, w)
		if err != nil {
			s.logf("nemesis: %s: %v", kind, err)
		}
		f.Healed = s.waitReady(ctx)
		s.logf("fault %-10s %-12s %6s injected, ready again %s after removal", f.Kind, f.Target,
			f.End.Sub(f.Start).Round(time.Millisecond), recoveryText(f))
		faults = append(faults, f)
		if snap, err := s.obs.snapshot(ctx, project); err == nil {
			snaps = append(snaps, snap)
		}
	}
}

// faultDeck draws fault kinds in rounds: each round is every kind of the
// scenario once, in an order the seeded rng shuffles. A run of n faults
// thus injects every kind at least n/len(kinds) times (rounded down),
// where independent draws could leave a kind out of a short run.
type faultDeck struct {
	rng   *rand.Rand
	kinds []string
	round []string // what is left of the current round
}

func newFaultDeck(rng *rand.Rand, kinds []string) *faultDeck {
	return &faultDeck{rng: rng, kinds: kinds}
}

// next returns the next kind to inject.
func (d *faultDeck) next() string {
	if len(d.round) == 0 {
		d.round = append([]string(nil), d.kinds...)
		d.rng.Shuffle(len(d.round), func(i, j int) { d.round[i], d.round[j] = d.round[j], d.round[i] })
	}
	k := d.round[0]
	d.round = d.round[1:]
	return k
}

func recoveryText(f check.Fault) string {
	if f.Healed.IsZero() {
		return "NEVER"
	}
	return f.Healed.Sub(f.End).Round(time.Millisecond).String()
}

func (s *suite) inject(ctx context.Context, rng *rand.Rand, kind string, w *workload) (check.Fault, error) {
	f := check.Fault{Kind: kind, Start: time.Now()}
	var err error
	between := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo)) * time.Millisecond }
	switch kind {
	case faultKill:
		r := s.replicas[rng.IntN(len(s.replicas))]
		f.Target = fmt.Sprintf("replica %d", r.idx)
		r.kill()
		sleep(ctx, between(300, 1500))
		f.End = time.Now()
		err = r.start(ctx)
	case faultTerminate:
		f.Target, f.DBFault = "database", true
		var n int
		n, err = s.obs.terminate(ctx)
		f.Target = fmt.Sprintf("%d conns", n)
		f.End = time.Now()
	case faultPGRestart:
		f.Target, f.DBFault = "database", true
		err = s.cluster.restart(ctx)
		f.End = time.Now()
	case faultDelay:
		d := between(50, 250)
		f.Target, f.DBFault = fmt.Sprintf("link +%s", d), true
		s.proxy.setDelay(d)
		sleep(ctx, between(1500, 3500))
		s.proxy.heal()
		f.End = time.Now()
	case faultStall:
		f.Target, f.DBFault = "link", true
		s.proxy.stall()
		sleep(ctx, between(1000, 3000))
		s.proxy.heal()
		f.End = time.Now()
	case faultCut:
		f.Target, f.DBFault = "link", true
		s.proxy.cutLink()
		sleep(ctx, between(500, 2500))
		s.proxy.heal()
		f.End = time.Now()
	case faultPause:
		// The replica serving the most lease holders (workers are pinned to
		// a replica), stopped for twice the lease and a half second more:
		// its holders' heartbeats hang, their leases expire and are taken
		// over, and the requests it held are executed after SIGCONT, late.
		best := 0
		for i := range s.replicas {
			if w.holders[i].Load() > w.holders[best].Load() {
				best = i
			}
		}
		r := s.replicas[best]
		f.Target = fmt.Sprintf("replica %d", r.idx)
		r.signal(syscall.SIGSTOP)
		sleep(ctx, 2*time.Duration(w.ttl)*time.Second+500*time.Millisecond)
		r.signal(syscall.SIGCONT)
		f.End = time.Now()
	default:
		return f, fmt.Errorf("unknown fault kind %q", kind)
	}
	return f, err
}

// waitReady waits until every replica answers /readyz, at most the ready
// bound; a replica that exited by itself is restarted (the fault then
// counts as not healed: readiness must come back without a restart).
func (s *suite) waitReady(ctx context.Context) time.Time {
	deadline := time.Now().Add(s.cfg.readyBound)
	for {
		all := true
		for _, r := range s.replicas {
			if !r.running() {
				s.logf("replica %d exited by itself (log %s): restarting it", r.idx, r.logTo)
				if err := r.start(ctx); err != nil {
					s.logf("replica %d: %v", r.idx, err)
				}
				s.waitReadyRaw(ctx, deadline)
				return time.Time{}
			}
			if !ready(ctx, r.url()) {
				all = false
			}
		}
		if all {
			return time.Now()
		}
		if time.Now().After(deadline) || !sleep(ctx, 100*time.Millisecond) {
			return time.Time{}
		}
	}
}

func (s *suite) waitReadyRaw(ctx context.Context, deadline time.Time) {
	for time.Now().Before(deadline) {
		all := true
		for _, r := range s.replicas {
			all = all && ready(ctx, r.url())
		}
		if all || !sleep(ctx, 100*time.Millisecond) {
			return
		}
	}
}
