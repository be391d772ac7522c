package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/telemetry"
)

// Files of an item's state directory (WORKGRAPH_STATE_DIR).
const (
	itemFileName     = "item.json"
	resultFileName   = "result.json"
	progressFileName = "progress.json"
	answersFileName  = "answers.json"
)

const (
	// tailBytes is how much of the command's stdout (result fallback) and
	// stderr (failure report) is kept.
	tailBytes = 4 << 10
	// maxBodyEnv bounds WORKGRAPH_ITEM_BODY; the whole body is in the item
	// file (an environment string may not exceed 128 KiB on Linux).
	maxBodyEnv = 64 << 10
	// controlPoll is how often the supervisor looks for the files the
	// command writes (attention control, progress) and the test gate.
	controlPoll = 100 * time.Millisecond
)

// outcomeKind is how supervising one item ended.
type outcomeKind string

const (
	outcomeCompleted   outcomeKind = "completed"
	outcomeFailed      outcomeKind = "failed"
	outcomeLost        outcomeKind = "lease_lost"
	outcomeBlocked     outcomeKind = "blocked"
	outcomeAttention   outcomeKind = "attention_requested"
	outcomeStopped     outcomeKind = "stopped"
	outcomeInterrupted outcomeKind = "interrupted"
	outcomeSetup       outcomeKind = "not_started"
	outcomeError       outcomeKind = "error"
)

// outcome is the report of one supervised item.
type outcome struct {
	kind     outcomeKind
	itemID   string
	leaseID  string
	epoch    int64
	exitCode int // the command's, -1 when killed or not started
	message  string
	err      error // the error to exit with (single mode)
}

// endsLoop reports whether the outcome ends a --loop: interrupted, a
// person asked the worker to stop, or the command cannot be run at all.
// Any other outcome (a failed command, a lost lease) is the item's, and the
// loop goes on with the next item.
func (o outcome) endsLoop() bool {
	return o.kind == outcomeInterrupted || o.kind == outcomeStopped || o.kind == outcomeSetup
}

// exit is the exit error of a single-item run.
func (o outcome) exit() error {
	switch o.kind {
	case outcomeCompleted, outcomeAttention, outcomeStopped:
		return nil
	case outcomeFailed:
		return &exitError{code: ExitError}
	case outcomeLost:
		return &exitError{code: ExitLeaseLost}
	case outcomeBlocked:
		return &exitError{code: ExitConflict}
	case outcomeInterrupted:
		return &exitError{code: ExitInterrupted}
	}
	if o.err != nil {
		return o.err
	}
	return &exitError{code: ExitError}
}

func (sv *supervisor) report(o outcome) {
	if sv.s.json {
		_ = json.NewEncoder(sv.s.Out).Encode(map[string]any{
			"item_id": o.itemID, "lease_id": o.leaseID, "epoch": o.epoch,
			"outcome": o.kind, "exit_code": o.exitCode, "message": o.message,
		})
	}
	sv.logf("%s", o.message)
}

// event is something that ends a run before the command exits by itself.
type event struct {
	kind   outcomeKind
	detail string
	hint   string // for a lost lease: what happened to it (default leaseEnd(""))
	err    error
	asked  *client.AskResult
}

// cannotStart is the exit-2 error for a command that could not be started,
// with what to do about the usual causes: a script without its execute
// bit, or a program in the working directory named without "./".
func cannotStart(name string, err error) error {
	var hint string
	switch {
	case errors.Is(err, os.ErrPermission):
		hint = fmt.Sprintf(" (make it executable: chmod +x %s; or name its interpreter: workgraph work -- sh %s)", name, name)
	case errors.Is(err, exec.ErrNotFound) && !strings.Contains(name, "/"):
		if fi, serr := os.Stat(name); serr == nil && !fi.IsDir() {
			hint = fmt.Sprintf(" (a program in this directory is named with its path: workgraph work -- ./%s)", name)
		}
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("cannot start %s: %w%s", name, err, hint)}
}

// runOne supervises the command on one claimed item.
func (sv *supervisor) runOne(ctx context.Context, cl *client.Claim) outcome {
	o := outcome{itemID: cl.Item.ID, leaseID: cl.Lease.ID, epoch: cl.Lease.Epoch, exitCode: -1}
	if ctx.Err() != nil {
		// Interrupted while the claim was answered (claimContext): the
		// command is not started, and the item goes back at once.
		o.kind = outcomeInterrupted
		o.message = fmt.Sprintf("interrupted; item %s %s", cl.Item.ID, sv.release(ctx, cl, "the supervisor was interrupted"))
		return o
	}
	sv.logf("claimed item %s %q (lease %s, epoch %d); running %s", cl.Item.ID, cl.Item.Title, cl.Lease.ID, cl.Lease.Epoch, strings.Join(sv.argv, " "))

	dir, err := sv.prepareState(cl)
	if err != nil {
		return sv.giveBack(ctx, cl, o, outcomeSetup, fmt.Errorf("preparing the state directory: %w", err))
	}
	if !sv.opt.keepState {
		defer os.RemoveAll(dir)
	}

	stdoutTail, stderrTail := newTail(tailBytes), newTail(tailBytes)
	cmd, err := commandFor(sv.argv, sv.opt.grace)
	if err != nil {
		return sv.giveBack(ctx, cl, o, outcomeSetup, cannotStart(sv.argv[0], err))
	}
	// The command's calls join the run's trace (TRACEPARENT), in place of
	// any trace context the supervisor itself inherited.
	cmd.Env = append(append(telemetry.WithoutEnv(os.Environ()), sv.commandEnv(cl, dir)...), telemetry.Env(ctx)...)
	if f, ok := sv.s.In.(*os.File); ok {
		cmd.Stdin = f
	}
	act := newActivity(workingDir(), time.Now())
	// With --json the supervisor's stdout carries only its JSON lines; the
	// command's stdout goes to stderr beside its own.
	cmdOut := sv.s.raw.Out
	if sv.s.json {
		cmdOut = sv.s.raw.Err
	}
	cmd.Stdout = io.MultiWriter(cmdOut, stdoutTail, act)
	cmd.Stderr = io.MultiWriter(sv.s.raw.Err, stderrTail, act)
	cmd.WaitDelay = 2 * time.Second
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return sv.giveBack(ctx, cl, o, outcomeSetup, cannotStart(sv.argv[0], err))
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	hbCtx, stopBeats := context.WithCancel(ctx)
	events := make(chan event, 4)
	var beats sync.WaitGroup
	beats.Add(2)
	until := &leaseClock{}
	until.set(time.Now().Add(cl.Lease.ExpiresAt.Sub(cl.Lease.AcquiredAt)))
	go func() { defer beats.Done(); sv.heartbeat(hbCtx, cl, dir, act, until, events) }()
	go func() { defer beats.Done(); watchControl(hbCtx, dir, events) }()
	finishBeats := func() { stopBeats(); beats.Wait() }

	select {
	case werr := <-exited:
		finishBeats()
		return sv.finish(ctx, cl, dir, o, werr, stdoutTail, stderrTail, until.get())
	case ev := <-events:
		finishBeats()
		switch ev.kind {
		case outcomeAttention:
			// The command asked a person and should exit by itself; give it
			// the grace period before stopping it.
			sv.waitOrStop(cmd, exited, sv.opt.grace)
			return sv.attentionOutcome(o, ev.asked)
		case outcomeStopped:
			sv.logf("%s: stopping the command", ev.detail)
			sv.stopCommand(cmd, exited)
			o.kind = outcomeStopped
			o.message = fmt.Sprintf("stopped on request; item %s %s", cl.Item.ID, sv.release(ctx, cl, ev.detail))
			return o
		default: // lost, or a refusal other than lease_lost
			sv.logf("%s: stopping the command", ev.detail)
			sv.stopCommand(cmd, exited)
			if ev.kind == outcomeLost {
				o.kind = outcomeLost
				hint := ev.hint
				if hint == "" {
					hint = leaseEnd("")
				}
				o.message = fmt.Sprintf("lease lost on item %s (%s); the command was stopped and nothing was reported for the item: %s", cl.Item.ID, ev.detail, hint)
				return o
			}
			o.kind, o.err = outcomeError, explain(ev.err, sv.s.cfg)
			o.message = fmt.Sprintf("item %s: heartbeat refused (%v); the command was stopped", cl.Item.ID, ev.err)
			return o
		}
	case <-ctx.Done():
		finishBeats()
		sv.logf("interrupted: stopping the command")
		sv.stopCommand(cmd, exited)
		o.kind = outcomeInterrupted
		o.message = fmt.Sprintf("interrupted; item %s %s", cl.Item.ID, sv.release(ctx, cl, "the supervisor was interrupted"))
		return o
	}
}

// finish reports the item after the command exited by itself: complete on
// exit 0, fail otherwise, unless the command asked a person meanwhile. A
// report the server cannot take yet (it is unreachable or unavailable) is
// tried again until the lease runs out by the local clock (leaseEnd): the
// work is worth keeping as long as the lease is.
func (sv *supervisor) finish(ctx context.Context, cl *client.Claim, dir string, o outcome, werr error, stdoutTail, stderrTail *tail, leaseEnd time.Time) outcome {
	o.exitCode = exitCodeOf(werr)
	if asked := readAsked(dir); asked != nil {
		return sv.attentionOutcome(o, asked)
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), later(time.Now().Add(30*time.Second), leaseEnd))
	defer cancel()
	var err error
	// refused is the problem code of a result the server refused (too
	// large, or a value it does not store): the item is failed, since the
	// same result would be refused again, rather than left leased to
	// nobody until its lease runs out.
	refused := ""
	if o.exitCode == 0 {
		var res json.RawMessage
		res, err = sv.result(dir, stdoutTail)
		if err == nil {
			var out *client.Completion
			err = sv.sendOutcome(ctx, rctx, leaseEnd, "completion", func(ctx context.Context) (err error) {
				out, err = sv.s.api.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: res})
				return err
			})
			if err == nil {
				o.kind = outcomeCompleted
				o.message = fmt.Sprintf("item %s done", cl.Item.ID)
				if out.Replayed {
					o.message += " (the command had completed it already with the same result)"
				}
				return o
			}
			if errors.Is(err, client.ErrBlocked) {
				return sv.blockedAfterExit(ctx, cl, o, err, res)
			}
			refused = refusedResult(err)
		}
	}
	if o.exitCode != 0 || refused != "" {
		msg := fmt.Sprintf("exit status %d", o.exitCode)
		if o.exitCode < 0 {
			msg = werr.Error()
		}
		if refused != "" {
			msg = refusedResultMessage(refused, err)
		}
		stderr := strings.TrimSpace(stderrTail.String())
		det := map[string]any{"exit_code": o.exitCode, "command": sv.argv, "stderr_tail": stderr}
		if refused != "" {
			det["result_refused"] = refused
		}
		details, _ := json.Marshal(det)
		errText := msg
		if stderr != "" {
			errText += ": " + lastBytes(stderr, 1024)
		}
		var res *client.FailResult
		err = sv.sendOutcome(ctx, rctx, leaseEnd, "failure", func(ctx context.Context) (err error) {
			res, err = sv.s.api.Fail(ctx, cl.Lease.ID, client.FailRequest{Epoch: cl.Lease.Epoch, Error: errText, Details: details})
			return err
		})
		if err == nil {
			o.kind = outcomeFailed
			o.message = fmt.Sprintf("the command failed (%s); item %s reported failed; it %s", msg, cl.Item.ID, afterFailure(res))
			return o
		}
	}
	if errors.Is(err, client.ErrLeaseLost) {
		return sv.lostAfterExit(rctx, cl, o)
	}
	o.kind, o.err = outcomeError, explain(err, sv.s.cfg)
	o.message = fmt.Sprintf("item %s: could not report the outcome: %v", cl.Item.ID, err)
	return o
}

// sendOutcome sends an outcome (send, within rctx) and sends it again while
// the server cannot take it (the client's own retries spent: the server
// unreachable, unavailable or rate limiting) and the lease has not run
// out by the local clock (leaseEnd). An interruption of the supervisor
// (ctx) ends the retries: the lease then runs out on the server. A second
// send of a completion the server had taken is answered as a replay.
func (sv *supervisor) sendOutcome(ctx, rctx context.Context, leaseEnd time.Time, what string, send func(context.Context) error) error {
	for {
		err := send(rctx)
		if err == nil || isRefusal(err) || errors.Is(err, client.ErrLeaseLost) {
			return err
		}
		wait := 2 * time.Second
		if time.Now().Add(wait).After(leaseEnd) {
			return err
		}
		sv.logf("could not report the %s yet (%v); trying again until the lease runs out (%s)",
			what, err, leaseEnd.Format(time.TimeOnly))
		select {
		case <-ctx.Done():
			return err
		case <-rctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// later returns the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// afterFailure says what a reported failure leaves: a retry after a
// backoff (until when), or, after too many failures in a row, a question
// to a person.
func afterFailure(res *client.FailResult) string {
	switch {
	case res.Attention != nil:
		return fmt.Sprintf("now waits for a person: it failed as often in a row as the project allows (attention request %s)",
			shortID(&res.Attention.ID))
	case res.RetryAfter != nil:
		return "will be retried after " + fmtTime(*res.RetryAfter)
	}
	return "can be claimed again"
}

// lostAfterExit explains a lease that was gone when the outcome was
// reported, from the lease itself (one read, however many leases the
// item has had): the command may have finished the item itself
// (workgraph complete/decompose/ask).
func (sv *supervisor) lostAfterExit(ctx context.Context, cl *client.Claim, o outcome) outcome {
	l, err := sv.s.api.GetLease(ctx, cl.Lease.ID)
	if err == nil && l.Outcome != nil {
		switch *l.Outcome {
		case client.OutcomeAttentionRequested:
			if noProgressEnding(l.OutcomeDetail) {
				o.kind = outcomeLost
				o.message = fmt.Sprintf("the project's no-progress policy ended the lease on item %s before the outcome "+
					"could be reported (exit status %d); a person is asked about the item", cl.Item.ID, o.exitCode)
				return o
			}
			return sv.attentionOutcome(o, nil)
		case client.OutcomeFailed:
			if o.exitCode != 0 {
				// The failure this supervisor reported, taken by the
				// server before its answer was lost.
				o.kind = outcomeFailed
				o.message = fmt.Sprintf("the command failed (exit status %d); item %s reported failed (the server had taken the report; its answer was lost)",
					o.exitCode, cl.Item.ID)
				return o
			}
			fallthrough
		case client.OutcomeCompleted, client.OutcomeDecomposed, client.OutcomeReleased:
			o.kind = outcomeCompleted
			o.message = fmt.Sprintf("the command ended the lease itself (%s); item %s", *l.Outcome, cl.Item.ID)
			return o
		}
	}
	hint := leaseEnd("")
	if err == nil && l.Outcome != nil {
		// Ended otherwise (cancelled, expired): say how.
		hint = leaseEnd(string(*l.Outcome))
	}
	o.kind = outcomeLost
	o.message = fmt.Sprintf("lease lost on item %s before the outcome could be reported (exit status %d): %s", cl.Item.ID, o.exitCode, hint)
	return o
}

// blockedAfterExit answers a completion refused as blocked (err): while
// the command ran, a person made the item wait for other work (a
// dependency, a child). Nothing was recorded and the lease is still held;
// the supervisor releases it, with the refusal and the last KiB of the
// command's result in the release's reason, so that the item runs again
// once that work is done (it is not claimable until then, so a --loop
// does not take it again at once), and the run exits 6 (a conflict).
func (sv *supervisor) blockedAfterExit(ctx context.Context, cl *client.Claim, o outcome, err error, res json.RawMessage) outcome {
	detail := err.Error()
	var ae *client.Error
	if errors.As(err, &ae) && ae.Detail != "" {
		detail = ae.Detail
	}
	// The refusal's advice to a worker that keeps its lease (it "is still
	// held: complete it once that work is finished, or release or fail
	// it") is not this supervisor's, which releases it below.
	detail, _, _ = strings.Cut(detail, "; the lease is still held")
	reason := "the command exited 0 but its completion was refused as blocked: " + detail +
		"; its result was not recorded (its last KiB: " + lastBytes(string(res), 1024) + ")"
	o.kind = outcomeBlocked
	o.message = fmt.Sprintf("item %s: the command exited 0, but the item now waits for work added while it ran, so its result was not recorded (%s); item %s",
		cl.Item.ID, detail, sv.release(ctx, cl, reason))
	return o
}

// refusedResult returns the problem code when the server refused a
// completion for its result (too large, or a value it does not store),
// else "".
func refusedResult(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) && (ae.Code == client.CodeInvalidArgument || ae.Code == client.CodePayloadTooLarge) {
		return ae.Code
	}
	return ""
}

// refusedResultMessage is the failure of an item whose command exited 0
// but whose result the server refused (code) with err.
func refusedResultMessage(code string, err error) string {
	detail := err.Error()
	var ae *client.Error
	if errors.As(err, &ae) && ae.Detail != "" {
		detail = ae.Detail
	}
	msg := "exit status 0, but the server refused its result: " + detail
	if code == client.CodePayloadTooLarge {
		msg += " (a result must fit in 1 MiB: store a big one elsewhere and write a reference to the result file)"
	}
	return msg
}

// progressRefused reports whether the server refused a heartbeat for its
// progress: a value it does not store, or a body over its limit.
func progressRefused(err error) bool {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return false
	}
	var field string
	ae.Extension("field", &field)
	return ae.Code == client.CodePayloadTooLarge ||
		(ae.Code == client.CodeInvalidArgument && strings.HasPrefix(field, "progress"))
}

func (sv *supervisor) attentionOutcome(o outcome, asked *client.AskResult) outcome {
	o.kind = outcomeAttention
	if asked != nil {
		o.message = fmt.Sprintf("item %s waits for a person (attention request %s: %s); it was not failed, and the next claim carries the answer",
			o.itemID, asked.Attention.ID, clip(asked.Attention.Question, 80))
	} else {
		o.message = fmt.Sprintf("item %s waits for a person (the command asked a question); it was not failed, and the next claim carries the answer", o.itemID)
	}
	return o
}

// giveBack releases an item the command could not even start on.
func (sv *supervisor) giveBack(ctx context.Context, cl *client.Claim, o outcome, kind outcomeKind, err error) outcome {
	o.kind, o.err = kind, err
	o.message = fmt.Sprintf("%v; item %s %s", err, cl.Item.ID, sv.release(ctx, cl, "the supervisor could not start the command: "+err.Error()))
	return o
}

// release gives the item back and says how that went (also when ctx, the
// run's, was cancelled: the release is the last call of the run's trace).
func (sv *supervisor) release(ctx context.Context, cl *client.Claim, reason string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	_, err := sv.s.api.Release(ctx, cl.Lease.ID, client.ReleaseRequest{Epoch: cl.Lease.Epoch, Reason: reason})
	switch {
	case err == nil:
		return "released"
	case errors.Is(err, client.ErrLeaseLost):
		return "was no longer leased (nothing to release)"
	}
	return fmt.Sprintf("could not be released (%v); its lease will expire", err)
}

// result is the completion result: the result file when the command wrote
// one, else the tail of its stdout.
func (sv *supervisor) result(dir string, stdoutTail *tail) (json.RawMessage, error) {
	data, err := os.ReadFile(filepath.Join(dir, resultFileName))
	if err == nil && len(strings.TrimSpace(string(data))) > 0 {
		if json.Valid(data) {
			return json.RawMessage(data), nil
		}
		sv.logf("warning: %s is not valid JSON; sending it as text", resultFileName)
		return json.Marshal(map[string]string{"result_text": storableText(string(data))})
	}
	return json.Marshal(map[string]string{"output_tail": stdoutTail.String()})
}

// stopCommand sends SIGTERM to the command's process group, then SIGKILL
// after the grace period, and waits for it.
func (sv *supervisor) stopCommand(cmd *exec.Cmd, exited <-chan error) {
	signalGroup(cmd, false)
	select {
	case <-exited:
		signalGroup(cmd, true) // whatever it left behind in its group
		return
	case <-time.After(sv.opt.grace):
	}
	sv.logf("the command did not stop within %s: killing it", sv.opt.grace)
	signalGroup(cmd, true)
	<-exited
}

// waitOrStop waits up to grace for the command to exit, then stops it.
func (sv *supervisor) waitOrStop(cmd *exec.Cmd, exited <-chan error, grace time.Duration) {
	select {
	case <-exited:
		return
	case <-time.After(grace):
	}
	sv.stopCommand(cmd, exited)
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode() // -1 when killed by a signal
	}
	return -1
}

// prepareState creates the item's state directory and its item file.
func (sv *supervisor) prepareState(cl *client.Claim) (string, error) {
	dir, err := os.MkdirTemp("", "workgraph-work-")
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(cl, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, itemFileName), data, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// commandEnv is what the command gets on top of the supervisor's
// environment.
func (sv *supervisor) commandEnv(cl *client.Claim, dir string) []string {
	body := cl.Item.Body
	if len(body) > maxBodyEnv {
		body = body[:maxBodyEnv] + "\n[truncated: the whole body is in WORKGRAPH_ITEM_FILE]"
	}
	cfg := sv.s.cfg
	env := []string{
		"WORKGRAPH_URL=" + cfg.URL,
		"WORKGRAPH_TOKEN=" + cfg.Token,
		"WORKGRAPH_PROJECT=" + cfg.Project,
		"WORKGRAPH_WORKER=" + sv.opt.worker,
		"WORKGRAPH_RETRIES=" + strconv.Itoa(cfg.Retries),
		envItemID + "=" + cl.Item.ID,
		envItemTitle + "=" + cl.Item.Title,
		envItemBody + "=" + body,
		envLeaseID + "=" + cl.Lease.ID,
		envEpoch + "=" + strconv.FormatInt(cl.Lease.Epoch, 10),
		envStateDir + "=" + dir,
		envItemFile + "=" + filepath.Join(dir, itemFileName),
		envResultFile + "=" + filepath.Join(dir, resultFileName),
		envProgressFile + "=" + filepath.Join(dir, progressFileName),
		envAnswersFile + "=" + filepath.Join(dir, answersFileName),
	}
	for _, kv := range fenceEnv(cl, cfg.URL) {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

const envProgressFile = "WORKGRAPH_PROGRESS_FILE"

// readAsked returns the attention control file `workgraph ask` wrote, if
// any.
func readAsked(dir string) *client.AskResult {
	data, err := os.ReadFile(filepath.Join(dir, attentionFile))
	if err != nil {
		return nil
	}
	var a client.AskResult
	if json.Unmarshal(data, &a) != nil {
		return &client.AskResult{}
	}
	return &a
}

// watchControl reports the attention control file as soon as it appears.
func watchControl(ctx context.Context, dir string, events chan<- event) {
	t := time.NewTicker(controlPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if asked := readAsked(dir); asked != nil {
			events <- event{kind: outcomeAttention, asked: asked}
			return
		}
	}
}

// tail keeps the last n bytes written to it.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, starting at a whole UTF-8 character, as
// text the server stores (storableText).
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for k := 0; k < 4 && len(b) > 0 && b[0]&0xC0 == 0x80; k++ {
		b = b[1:]
	}
	return storableText(string(b))
}

// storableText is s with NUL and bytes that are not UTF-8 replaced by
// U+FFFD: the server takes only valid UTF-8 without NUL (docs/api.md), and
// a command's output, or a result file that is not JSON, may hold any
// bytes, which must not get the item's report refused.
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// lastBytes returns about the last n bytes of s.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}
