package cli

import (
	"context"
	"errors"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// runConcurrent is `workgraph work --concurrency N`: up to N runs at once.
// Free slots are claimed in one call (ClaimBatch, up to the free slots),
// and the runs' heartbeats are sent together (heartbeatBatcher): one call
// for the leases due at about the same time. Each run is supervised as a
// single run is (runOne); its outcome is reported as it ends. Without
// --loop one batch is claimed and work exits when its runs have ended
// (with the first non-zero exit among them); with --loop it claims again
// whenever slots are free (every claimRecheck while others run), until
// nothing is ready and none runs (with --wait: forever), and exits 0
// unless a run ended the loop (endsLoop).
func (sv *supervisor) runConcurrent(ctx context.Context) error {
	bctx, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	sv.beats = newHeartbeatBatcher(sv.s.api, sv.s.cfg.Project)
	go sv.beats.run(bctx)

	results := make(chan outcome, sv.opt.concurrency)
	active, done := 0, 0
	claiming := true
	var exit error
	for {
		if free := sv.opt.concurrency - active; claiming && free > 0 && ctx.Err() == nil {
			wait := time.Duration(0)
			if active == 0 {
				wait = sv.opt.wait
			}
			cs, err := sv.claimSlots(ctx, free, wait)
			switch {
			case errors.Is(err, client.ErrNothingReady):
				if active == 0 && !(sv.opt.loop && sv.opt.wait > 0) {
					if done == 0 && !sv.opt.loop {
						return nothingReady(ctx, sv.s, sv.claimRequest(), sv.opt.wait)
					}
					sv.nothingMore(ctx, done)
					return exit
				}
			case active == 0 && sv.doneForNow(err, done):
				sv.nothingMore(ctx, done)
				return exit
			case err != nil && ctx.Err() == nil && active == 0 && sv.forever() && serverTrouble(err):
				if !sv.pauseAfter(ctx, err) {
					return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
				}
				continue
			case err != nil && ctx.Err() == nil && active == 0:
				return err
			case err != nil && ctx.Err() == nil:
				sv.logf("claim failed (%v); claiming again when a run ends", err)
			}
			for _, cl := range cs {
				active++
				go func() { results <- sv.runOne(ctx, &cl) }()
			}
			if !sv.opt.loop {
				claiming = false
			}
		}
		if active == 0 {
			if ctx.Err() != nil {
				return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
			}
			if !claiming {
				return exit
			}
			continue
		}
		var recheck <-chan time.Time
		if claiming && active < sv.opt.concurrency {
			recheck = time.After(claimRecheck)
		}
		select {
		case out := <-results:
			active--
			done++
			sv.report(out)
			// Under --loop only what ends the loop sets the exit status
			// (as with one slot); a failed item is the item's, and the
			// loop exits 0 when nothing more is ready.
			if err := out.exit(); err != nil && exit == nil && (!sv.opt.loop || out.endsLoop()) {
				exit = err
			}
			if out.endsLoop() {
				claiming = false
			}
		case <-recheck:
		}
	}
}

// claimRecheck is how often a supervisor with free slots and running
// commands looks for new work.
const claimRecheck = 5 * time.Second

// claimSlots claims up to n items in one call, waiting up to wait.
func (sv *supervisor) claimSlots(ctx context.Context, n int, wait time.Duration) ([]client.Claim, error) {
	cctx, cancel := claimContext(ctx, wait)
	defer cancel()
	return claimBatchWaiting(cctx, sv.s.api, sv.s.cfg.Project, sv.claimRequest(), min(n, client.MaxBatch), wait)
}

// beat renews one lease: through the batcher when the supervisor runs
// several commands, else in its own call.
func (sv *supervisor) beat(ctx context.Context, leaseID string, req client.HeartbeatRequest) (*client.Heartbeat, error) {
	if sv.beats == nil {
		return sv.s.api.Heartbeat(ctx, leaseID, req)
	}
	return sv.beats.send(ctx, leaseID, req)
}

// heartbeatBatcher sends the heartbeats of concurrent runs together: the
// calls that arrive within heartbeatGather of the first one (at most
// client.MaxBatch) go in one HeartbeatBatch, and each run gets its own
// entry's answer (EntryError: lease_lost and the rest, as the single
// heartbeat answers them). A failure of the whole call is every caller's.
type heartbeatBatcher struct {
	api     *client.Client
	project string
	calls   chan heartbeatCall
}

// heartbeatGather is how long the batcher waits for more heartbeats after
// the first one.
const heartbeatGather = 20 * time.Millisecond

type heartbeatCall struct {
	ctx     context.Context
	leaseID string
	req     client.HeartbeatRequest
	reply   chan heartbeatReply
}

type heartbeatReply struct {
	hb  *client.Heartbeat
	err error
}

func newHeartbeatBatcher(api *client.Client, project string) *heartbeatBatcher {
	return &heartbeatBatcher{api: api, project: project, calls: make(chan heartbeatCall)}
}

// send queues one heartbeat and waits for its answer.
func (b *heartbeatBatcher) send(ctx context.Context, leaseID string, req client.HeartbeatRequest) (*client.Heartbeat, error) {
	c := heartbeatCall{ctx: ctx, leaseID: leaseID, req: req, reply: make(chan heartbeatReply, 1)}
	select {
	case b.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r.hb, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run gathers and sends batches until ctx ends.
func (b *heartbeatBatcher) run(ctx context.Context) {
	for {
		var batch []heartbeatCall
		select {
		case c := <-b.calls:
			batch = append(batch, c)
		case <-ctx.Done():
			return
		}
		gather := time.After(heartbeatGather)
	more:
		for len(batch) < client.MaxBatch {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			case <-gather:
				break more
			case <-ctx.Done():
				return
			}
		}
		b.flush(ctx, batch)
	}
}

func (b *heartbeatBatcher) flush(ctx context.Context, batch []heartbeatCall) {
	entries := make([]client.HeartbeatEntry, len(batch))
	// The call lasts as long as the entry with the latest deadline may wait.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var latest time.Time
	for i, c := range batch {
		entries[i] = client.HeartbeatEntry{LeaseID: c.leaseID, Epoch: c.req.Epoch, Progress: c.req.Progress,
			LeaseSeconds: c.req.LeaseSeconds, WorkerTime: c.req.WorkerTime}
		if d, ok := c.ctx.Deadline(); ok && d.After(latest) {
			latest = d
		}
	}
	if !latest.IsZero() {
		var c2 context.CancelFunc
		callCtx, c2 = context.WithDeadline(callCtx, latest)
		defer c2()
	}
	answers, err := b.api.HeartbeatBatch(callCtx, b.project, entries)
	if inputRefused(err) {
		// One entry's input (a progress the server does not store) refuses
		// the whole call: send each alone, so that it refuses only its own
		// run's heartbeat, not every run's, and names the field as a lone
		// heartbeat does (progress..., not body[0].progress...: the run
		// renews its lease without the progress it recognises so).
		for _, c := range batch {
			hb, err := b.api.Heartbeat(callCtx, c.leaseID, c.req)
			c.reply <- heartbeatReply{hb: hb, err: err}
		}
		return
	}
	for i, c := range batch {
		r := heartbeatReply{err: err}
		if err == nil {
			if i < len(answers) {
				a := answers[i]
				r = heartbeatReply{hb: a.Heartbeat, err: client.EntryError(a.Status, a.Problem)}
			} else {
				r.err = errors.New("the server answered fewer heartbeats than were sent")
			}
		}
		c.reply <- r
	}
}

// inputRefused reports whether the server refused a call for what it
// carried (a value it does not store, a body over its limit).
func inputRefused(err error) bool {
	var ae *client.Error
	return errors.As(err, &ae) && (ae.Code == client.CodeInvalidArgument || ae.Code == client.CodePayloadTooLarge)
}
