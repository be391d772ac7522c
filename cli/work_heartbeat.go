package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// heartbeat renews the lease every third of its time to live until ctx
// ends, and reports on events what must end the run:
//   - outcomeLost: the server refused the heartbeat (lease_lost), or no
//     heartbeat got through before the lease ran out by the local clock
//     (the server's clock decides, so the worker stops first);
//   - outcomeStopped: a person asked the worker to stop;
//   - outcomeError: any other refusal (e.g. the token was revoked).
//
// The progress of a heartbeat is the command's real activity (see
// activity), with what it wrote to its progress file as "reported"; it is
// sent only when it changed since the last heartbeat, so a silent command
// stops making progress on the server. Answers to non-blocking questions
// are written to the answers file.
func (sv *supervisor) heartbeat(ctx context.Context, cl *client.Claim, dir string, act *activity, until *leaseClock, events chan<- event) {
	ttl := cl.Lease.ExpiresAt.Sub(cl.Lease.AcquiredAt)
	if ttl <= 0 {
		ttl = sv.opt.ttl
	}
	interval := max(ttl/3, 200*time.Millisecond)
	// deadline is when the lease runs out at the latest, by the local clock:
	// the expiry the server granted, measured from when the request that
	// renewed it was sent.
	deadline := time.Now().Add(ttl)
	until.set(deadline)
	gate := os.Getenv(envHeartbeatGate)
	var (
		progressMod time.Time
		reported    json.RawMessage
		lastMarker  string
		answers     = map[string]client.AttentionRequest{}
		order       []string
	)
	next := time.Now().Add(interval)
	for {
		wait := time.Until(next)
		if d := time.Until(deadline); d < wait {
			wait = d
		}
		if gated(gate) {
			wait = controlPoll
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, 0)):
		}
		if gated(gate) {
			// Test hook: frozen. No heartbeats, no watchdog; the lease keeps
			// running out on the server meanwhile.
			deadline = time.Now().Add(ttl)
			until.set(deadline)
			next = time.Now()
			continue
		}
		if time.Now().After(deadline) {
			events <- event{kind: outcomeLost, detail: "no heartbeat got through before the lease ran out"}
			return
		}
		if time.Now().Before(next) {
			continue
		}
		req := client.HeartbeatRequest{Epoch: cl.Lease.Epoch, LeaseSeconds: seconds(ttl)}
		if p, mod := readProgress(dir, progressMod); p != nil {
			reported, progressMod = p, mod
		}
		marker := act.marker(reported)
		if string(marker) != lastMarker {
			req.Progress = marker
		}
		sent := time.Now()
		req.WorkerTime = &sent
		callCtx, cancel := context.WithDeadline(ctx, deadline)
		hb, err := sv.beat(callCtx, cl.Lease.ID, req)
		if len(reported) > 0 && progressRefused(err) {
			// What the command wrote to its progress file is advisory: it
			// must not cost the lease. Renew without it.
			sv.logf("warning: the server refused what %s holds (%v); renewing the lease without it", progressFileName, err)
			reported = nil
			marker = act.marker(nil)
			req.Progress = nil
			if string(marker) != lastMarker {
				req.Progress = marker
			}
			hb, err = sv.beat(callCtx, cl.Lease.ID, req)
		}
		cancel()
		switch {
		case err == nil:
			lastMarker = string(marker)
			deadline = sent.Add(ttl)
			until.set(deadline)
			next = sent.Add(interval)
			if hb.StopRequested {
				why := "a person asked this worker to stop"
				if hb.StopReason != nil && *hb.StopReason == "budget_exhausted" {
					why = "the budget of this item's subtree is spent"
				} else if hb.Lease.StopNote != nil {
					why += ": " + *hb.Lease.StopNote
				}
				events <- event{kind: outcomeStopped, detail: why}
				return
			}
			if len(hb.Answers) > 0 {
				for _, a := range hb.Answers {
					if _, seen := answers[a.ID]; !seen {
						order = append(order, a.ID)
					}
					answers[a.ID] = a
				}
				writeAnswers(dir, answers, order)
			}
		case ctx.Err() != nil:
			return
		case endedForAttention(err) && sv.endedForNoProgress(ctx, cl.Lease.ID):
			// Not the command's question: the project's no-progress
			// policy ended a lease that kept heartbeating without progress.
			events <- event{kind: outcomeLost, detail: "the project's no-progress policy ended the lease " +
				"(its progress did not change for too long; a person is asked about the item)",
				hint: "the item comes back once a person has decided"}
			return
		case endedForAttention(err):
			// The command asked a person; its control file may not be
			// written yet.
			events <- event{kind: outcomeAttention}
			return
		case errors.Is(err, client.ErrLeaseLost), errors.Is(err, client.ErrNotFound):
			ev := event{kind: outcomeLost, detail: "the server refused the heartbeat: " + err.Error()}
			if ae := (*client.Error)(nil); errors.As(err, &ae) && ae.Code == client.CodeLeaseLost {
				ev.hint = supervisedLostHint(ae)
			}
			events <- ev
			return
		case isRefusal(err):
			events <- event{kind: outcomeError, detail: "heartbeat refused", err: err}
			return
		default:
			// Transport trouble: retry soon, until the deadline decides.
			sv.logf("heartbeat failed (%v); retrying", err)
			next = time.Now().Add(min(interval/3, 2*time.Second))
		}
	}
}

// leaseClock is when the lease runs out at the latest by the local clock,
// as the heartbeats last learned it: what the outcome's report may retry
// until.
type leaseClock struct{ at atomic.Int64 }

func (c *leaseClock) set(t time.Time) { c.at.Store(t.UnixNano()) }
func (c *leaseClock) get() time.Time  { return time.Unix(0, c.at.Load()) }

// endedForAttention reports whether err is lease_lost because the lease
// ended for an attention request (the problem's "outcome" member).
func endedForAttention(err error) bool {
	var ae *client.Error
	var outcome string
	return errors.As(err, &ae) && ae.Code == client.CodeLeaseLost &&
		ae.Extension("outcome", &outcome) && outcome == client.OutcomeAttentionRequested
}

// endedForNoProgress reports whether the lease ended for the project's
// no-progress policy (its outcome_detail's reason), rather than for a
// question the command asked. When the lease cannot be read, it says no:
// the command's question is the common case.
func (sv *supervisor) endedForNoProgress(ctx context.Context, leaseID string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := sv.s.api.GetLease(ctx, leaseID)
	return err == nil && noProgressEnding(l.OutcomeDetail)
}

// noProgressEnding reports whether an ended lease's outcome_detail says
// the no-progress policy ended it.
func noProgressEnding(outcomeDetail json.RawMessage) bool {
	var detail struct {
		Reason string `json:"reason"`
	}
	return json.Unmarshal(outcomeDetail, &detail) == nil && detail.Reason == noProgressReason
}

// noProgressReason is the reason of the attention request (and of the
// ended lease's outcome_detail) the no-progress policy opens.
const noProgressReason = "no_progress"

// isRefusal: the server answered and refused (not a transport failure, a
// server error or rate limiting, which are worth retrying).
func isRefusal(err error) bool {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case client.CodeUnavailable, client.CodeInternal, client.CodeRateLimited, client.CodeRequestInProgress:
		return false
	}
	return true
}

func gated(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// readProgress returns the progress file's content when it changed since
// last.
func readProgress(dir string, last time.Time) (json.RawMessage, time.Time) {
	path := filepath.Join(dir, progressFileName)
	st, err := os.Stat(path)
	if err != nil || !st.ModTime().After(last) {
		return nil, last
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil, last
	}
	return jsonOrString(storableText(string(data))), st.ModTime()
}

func writeAnswers(dir string, answers map[string]client.AttentionRequest, order []string) {
	list := make([]client.AttentionRequest, 0, len(order))
	for _, id := range order {
		list = append(list, answers[id])
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, answersFileName), data)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "workgraph work: writing the answers file: %v\n", err)
	}
}
