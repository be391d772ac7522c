package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errEmpty is returned by an iteration that found nothing to claim. It is
// counted, and the worker backs off briefly; a healthy run has none.
var errEmpty = errors.New("nothing ready")

// window is the measured interval of a run: operations that finish inside
// it count, the warm-up before it does not.
type window struct{ start, end time.Time }

func (w window) contains(t time.Time) bool { return !t.Before(w.start) && t.Before(w.end) }

// recorder collects one worker's latencies and operation count.
type recorder struct {
	win window
	// seconds is the measured time (summed over the rounds of an
	// interleaved run).
	seconds float64
	lat     map[string]*hist
	ops     int64 // atomic while the loop runs (others read it, see loop.minOps)
	errs    map[string]int64
	extra   map[string]float64
}

func newRecorder(win window) *recorder {
	return &recorder{win: win, lat: map[string]*hist{}, errs: map[string]int64{}, extra: map[string]float64{}}
}

// observe records the time since start under phase, if it ends inside the
// window, and returns it.
func (r *recorder) observe(phase string, start time.Time) time.Duration {
	now := time.Now()
	d := now.Sub(start)
	if r.win.contains(now) {
		h := r.lat[phase]
		if h == nil {
			h = newHist()
			r.lat[phase] = h
		}
		h.add(d)
	}
	return d
}

// done counts one finished operation (an item, a heartbeat) if it finished
// inside the window.
func (r *recorder) done() {
	if r.win.contains(time.Now()) {
		atomic.AddInt64(&r.ops, 1)
	}
}

func (r *recorder) fail(err error) {
	if r.win.contains(time.Now()) {
		r.errs[errorKind(err)]++
	}
}

func (r *recorder) merge(o *recorder) {
	r.ops += o.ops
	for k, h := range o.lat {
		if r.lat[k] == nil {
			r.lat[k] = newHist()
		}
		r.lat[k].merge(h)
	}
	for k, n := range o.errs {
		r.errs[k] += n
	}
	for k, v := range o.extra {
		r.extra[k] += v
	}
}

// loop is a fixed-duration closed-loop run: workers call iter back to back
// for warmup+duration; iter records its phases and calls rec.done().
type loop struct {
	workers  int
	warmup   time.Duration
	duration time.Duration
	iter     func(ctx context.Context, worker int, rec *recorder) error
	// minOps, when set (a smoke run, which checks that a workload works,
	// not how fast), keeps the window open past warmup+duration until
	// that many operations finished in it: on a loaded machine one
	// operation may take longer than a smoke run's short window.
	minOps int64
	// cpu, if set, reads the CPU used in the window (cpuMeter).
	cpu *cpuMeter
}

// run executes the loop and returns the merged record of the window.
func (l loop) run(ctx context.Context) *recorder {
	t0 := time.Now()
	win := window{start: t0.Add(l.warmup), end: t0.Add(l.warmup + l.duration)}
	stop := win.end
	// Operations still in flight at the end get a grace period, then are
	// cancelled.
	deadline := stop.Add(30 * time.Second)
	if l.minOps > 0 {
		win.end = deadline
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	recs := make([]*recorder, l.workers)
	for w := range recs {
		recs[w] = newRecorder(win)
	}
	more := func() bool {
		if time.Now().Before(stop) {
			return true
		}
		var n int64
		for _, r := range recs {
			n += atomic.LoadInt64(&r.ops)
		}
		return n < l.minOps
	}
	var wg sync.WaitGroup
	var cpu0, cpu1 cpuSample
	// The samples bracket the operations counted: a fixed window's from
	// its start to its stop; with minOps, whose operations may run past
	// the stop (a smoke run on a loaded machine: none ended in the
	// window), to the end of the last one, else the WAL and CPU of the
	// operations counted would fall outside the window (0 WAL per op).
	if l.cpu != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sleepUntil(ctx, win.start)
			cpu0 = l.cpu.sample()
			sleepUntil(ctx, stop)
			if l.minOps == 0 {
				cpu1 = l.cpu.sample()
			}
		}()
	}
	for w := 0; w < l.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rec := recs[w]
			for more() && ctx.Err() == nil {
				if err := l.iter(ctx, w, rec); err != nil {
					rec.fail(err)
					pause := 10 * time.Millisecond
					if errors.Is(err, errEmpty) {
						pause = 2 * time.Millisecond
					}
					select {
					case <-time.After(pause):
					case <-ctx.Done():
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if l.cpu != nil && l.minOps > 0 {
		cpu1 = l.cpu.sample()
	}
	total := newRecorder(win)
	for _, r := range recs {
		total.merge(r)
	}
	if l.cpu != nil && cpu0.pg != nil && cpu1.pg != nil {
		cpu1.addTo(total, cpu0)
	}
	total.seconds = l.duration.Seconds()
	if l.minOps > 0 {
		total.seconds = max(total.seconds, time.Since(win.start).Seconds())
	}
	return total
}

// variant is one measured configuration of an interleaved run.
type variant struct {
	workload int
	name     string
	workers  int
	iter     func(ctx context.Context, worker int, rec *recorder) error
	unit     string
	primary  string
	// size, if set, is the Result's Size.
	size int64
	// done, if set, runs after the last round (e.g. stops a backlog
	// refiller) and may add to the result.
	done func(r *Result)
	// before and after, if set, run around each of the variant's rounds
	// (e.g. turn the event triggers off for it); an error of before skips
	// the round.
	before, after func(ctx context.Context) error
}

// minOps is loop.minOps: 1 in a smoke run, else 0 (a fixed window).
func (e *env) minOps() int64 {
	if e.cfg.Smoke {
		return 1
	}
	return 0
}

// rounds is how many turns each variant of an interleaved run gets.
func (e *env) rounds() int {
	if e.cfg.Smoke {
		return 1
	}
	return 5
}

// interleave runs the variants in turn, in rounds: each round gives every
// variant warmup/rounds of warm-up and duration/rounds of measurement, so a
// change in the load of a shared machine hits every variant alike. Each
// variant is measured for -duration in all.
func (e *env) interleave(ctx context.Context, vs []variant) []Result {
	k := e.rounds()
	acc := make([]*recorder, len(vs))
	for round := 0; round < k; round++ {
		for i, v := range vs {
			if ctx.Err() != nil {
				break
			}
			if v.before != nil {
				if err := v.before(ctx); err != nil {
					e.logf("  W%d %s: round %d skipped: %v", v.workload, v.name, round+1, err)
					continue
				}
			}
			rec := loop{workers: v.workers, warmup: e.warmup() / time.Duration(k),
				duration: e.duration() / time.Duration(k), iter: v.iter, minOps: e.minOps(), cpu: e.cpu}.run(ctx)
			if v.after != nil {
				if err := v.after(context.WithoutCancel(ctx)); err != nil {
					e.logf("  W%d %s: after round %d: %v", v.workload, v.name, round+1, err)
				}
			}
			if acc[i] == nil {
				acc[i] = rec
			} else {
				acc[i].merge(rec)
				acc[i].seconds += rec.seconds
			}
		}
	}
	out := make([]Result, 0, len(vs))
	for i, v := range vs {
		if acc[i] == nil {
			continue
		}
		r := fromRecorder(v.workload, v.name, v.workers, acc[i], v.unit, v.primary)
		perThousandOps(&r)
		r.Size = v.size
		if v.done != nil {
			v.done(&r)
		}
		lat := r.Latency[r.Primary]
		e.logf("  W%d %-24s agents=%-3d %9.1f %-12s %s p50=%.2fms p99=%.2fms%s", v.workload, v.name, v.workers,
			r.Rate, r.Unit, r.Primary, lat.P50Ms, lat.P99Ms, errSuffix(r))
		out = append(out, r)
	}
	return out
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
	}
}
