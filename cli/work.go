package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/telemetry"
)

func init() { extraCommands = append(extraCommands, newWorkCmd) }

// envHeartbeatGate names the supervisor's test hook: while the file at this
// path exists, the supervisor sends no heartbeats and its local expiry
// watchdog is suspended, as if the supervisor were frozen (SIGSTOP). Tests
// use it to let a lease expire and be taken over, then remove the file: the
// next heartbeat is refused. Not for production use.
const envHeartbeatGate = "WORKGRAPH_TEST_HEARTBEAT_GATE"

// workOptions are the flags of `workgraph work`.
type workOptions struct {
	loop      bool
	wait      time.Duration
	ttl       time.Duration
	grace     time.Duration
	labels    []string
	caps      []string
	worker    string
	keepState bool
	// concurrency is how many commands run at once (runConcurrent).
	concurrency int
}

func newWorkCmd(stdio IO) *cobra.Command {
	var (
		f   clientFlags
		opt workOptions
	)
	cmd := &cobra.Command{
		Use:   "work [flags] -- COMMAND [ARGS...]",
		Short: "Supervise a command: claim an item, run the command on it, heartbeat, complete or fail",
		Long: `Claim an item, run COMMAND for it, keep the lease alive and report the outcome.

The command gets the item in its environment:
  WORKGRAPH_ITEM_ID, WORKGRAPH_ITEM_TITLE, WORKGRAPH_ITEM_BODY
  WORKGRAPH_LEASE_ID, WORKGRAPH_EPOCH          (so workgraph ask/decompose work from inside)
  WORKGRAPH_ITEM_FILE     JSON: the item, the lease and its attention history (questions and answers)
  WORKGRAPH_RESULT_FILE   where the command may write its JSON result
  WORKGRAPH_PROGRESS_FILE where it may write progress (sent with the next heartbeat)
  WORKGRAPH_ANSWERS_FILE  answers to non-blocking questions arrive here
  WORKGRAPH_STATE_DIR     the directory of those files
  WORKGRAPH_URL, WORKGRAPH_TOKEN, WORKGRAPH_PROJECT, WORKGRAPH_WORKER, WORKGRAPH_RETRIES
  WORKGRAPH_FENCE         the lease's signed fence token (send it as the Workgraph-Fence header)
  WORKGRAPH_OPERATION_PREFIX  "<item id>/": start operation ids with it (Workgraph-Operation)
  WORKGRAPH_FENCE_KEYS_URL    where destinations fetch the key that checks the token
  TRACEPARENT, TRACESTATE     the W3C trace context of the run (pass it on to join its trace)

With OTEL_EXPORTER_OTLP_ENDPOINT set, each run is an OpenTelemetry span
"workgraph work" (below the supervisor's own TRACEPARENT, if given), and
its calls to the server are spans below it.

While the command runs, the lease is renewed every third of its time to live.
Exit 0 completes the item (result: the result file if written, else
{"output_tail": the last 4 KiB of stdout}); a non-zero exit fails it (the
exit status and the tail of stderr are reported). If the lease is lost (a
heartbeat is refused, or the server cannot be reached before the lease runs
out), the command's process group gets SIGTERM, then SIGKILL after --grace,
nothing is reported for the item, and work exits 4. If a person asks the
worker to stop, the command is stopped the same way and the item released.

A command that needs a person runs ` + "`workgraph ask \"question\"`" + `: the lease ends, the
item waits for the answer, and the supervisor stops quietly without failing
the item; the next claim of the item carries the answer.

Exit status: 0 done (or handed to a person, or stopped at a person's
request), 1 the command failed, 2 bad arguments or the command cannot be
started (one that is not found or not executable is refused before anything
is claimed; one that fails to start later releases its item), 3 nothing was ready, 4 the lease was lost,
6 no ready item matches --capabilities, 7 the token was refused, 8 the
server could not be reached, 130 interrupted. With --loop, work keeps
claiming until nothing is ready (with --wait: forever, also through an
outage of the server: a claim that cannot get through is tried again every
5s) and exits 0.

With --concurrency N, up to N commands run at once, each on its own item
with its own state directory: free slots are claimed in one call (a batch
claim) and the heartbeats of the leases due together go in one batch call.
Without --loop work claims one batch and exits when its commands have
ended, with the first non-zero exit status among them.`,
		Example: `  workgraph work -- ./agent.sh
  workgraph work --loop --wait 60s --lease 10m --labels backend -- claude -p "$(cat prompt.md)"
  workgraph work --loop --concurrency 8 -- ./agent.sh`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, argv []string) error {
			if opt.worker == "" {
				opt.worker = s.cfg.Worker
			}
			// A command that cannot be started (a typo, a script without
			// its execute bit) is refused before any claim, so it takes no
			// item; commandFor checks again when it starts it.
			if _, err := exec.LookPath(argv[0]); err != nil {
				return cannotStart(argv[0], err)
			}
			tr, err := setupTracing(ctx, "workgraph-work", logger(s.Err))
			if err != nil {
				return err
			}
			defer tr.shutdown()
			return (&supervisor{s: s, opt: opt, argv: argv, tracer: tr.Tracer("cli")}).run(ctx)
		}),
	}
	addClientFlags(cmd, &f)
	cmd.PersistentFlags().Lookup("json").Usage = "print one JSON report per item on stdout, and only that: the command's stdout goes to stderr"
	fl := cmd.Flags()
	// Everything from the command on is the command's: work ./agent.sh -v.
	fl.SetInterspersed(false)
	fl.BoolVar(&opt.loop, "loop", false, "keep taking work until nothing is ready (forever with --wait)")
	fl.DurationVar(&opt.wait, "wait", 0, "wait up to this long for an item to become ready")
	fl.DurationVar(&opt.ttl, "lease", 5*time.Minute, "lease time to live; heartbeats every third of it")
	fl.DurationVar(&opt.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when the command must stop")
	fl.StringSliceVar(&opt.labels, "labels", nil, "only items carrying all these labels (comma-separated)")
	fl.StringSliceVar(&opt.caps, "capabilities", nil, "what the command can do: only items requiring no more are handed out (comma-separated)")
	fl.StringVar(&opt.worker, "worker", "", "worker label (env WORKGRAPH_WORKER; default the host name)")
	fl.BoolVar(&opt.keepState, "keep-state", false, "keep each item's state directory (item, result and answers files)")
	fl.IntVar(&opt.concurrency, "concurrency", 1, "run up to this many commands at once (1..100): free slots are claimed in one call and the leases renewed together")
	return cmd
}

// supervisor runs `workgraph work`.
type supervisor struct {
	s      *session
	opt    workOptions
	argv   []string
	tracer trace.Tracer
	// beats sends the heartbeats of concurrent runs together (nil: each
	// run sends its own).
	beats *heartbeatBatcher
}

func (sv *supervisor) run(ctx context.Context) error {
	if sv.opt.concurrency < 1 || sv.opt.concurrency > client.MaxBatch {
		return &exitError{code: ExitUsage, err: fmt.Errorf("--concurrency must be between 1 and %d, got %d", client.MaxBatch, sv.opt.concurrency)}
	}
	if sv.opt.concurrency > 1 {
		return sv.runConcurrent(ctx)
	}
	done := 0
	for {
		out, err := sv.cycle(ctx)
		switch {
		case errors.Is(err, client.ErrNothingReady) && sv.opt.loop && sv.opt.wait > 0:
			continue
		case errors.Is(err, client.ErrNothingReady) && sv.opt.loop, sv.doneForNow(err, done):
			sv.nothingMore(ctx, done)
			return nil
		case errors.Is(err, client.ErrNothingReady):
			return nothingReady(ctx, sv.s, sv.claimRequest(), sv.opt.wait)
		case err != nil && ctx.Err() != nil:
			// Interrupted while claiming. A run that was interrupted
			// (err == nil) is reported below: its item was released.
			return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
		case sv.forever() && serverTrouble(err):
			if !sv.pauseAfter(ctx, err) {
				return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
			}
			continue
		case err != nil:
			return err
		}
		done++
		sv.report(out)
		if !sv.opt.loop || out.endsLoop() {
			return out.exit()
		}
	}
}

// forever reports whether the supervisor runs until interrupted (--loop
// with --wait): then it outlives an outage of the server (a restart, an
// upgrade) instead of exiting when a claim cannot get through.
func (sv *supervisor) forever() bool { return sv.opt.loop && sv.opt.wait > 0 }

// serverTrouble reports whether err is the server's trouble, not a
// refusal: it could not be reached, or answered that it is unavailable,
// failed or rate-limits (after the client's own retries).
func serverTrouble(err error) bool {
	var ae *client.Error
	return client.Unreachable(err) || (errors.As(err, &ae) && !isRefusal(err))
}

// claimPause is how long a supervisor that runs forever waits before it
// claims again after server trouble.
const claimPause = 5 * time.Second

// pauseAfter says that a claim failed for server trouble and waits
// claimPause; false when ctx ended meanwhile.
func (sv *supervisor) pauseAfter(ctx context.Context, err error) bool {
	sv.logf("claim failed (%v); claiming again in %s (--loop --wait runs until interrupted)", err, claimPause)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(claimPause):
		return true
	}
}

// cycle claims one item and supervises the command on it: one run, traced
// as the span "workgraph work" (a child of the supervisor's own
// TRACEPARENT, if it was given one), whose context the claim, the
// heartbeats, the report and the command (TRACEPARENT) carry.
func (sv *supervisor) cycle(ctx context.Context) (outcome, error) {
	ctx, span := sv.tracer.Start(ctx, "workgraph work", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	cctx, cancel := claimContext(ctx, sv.opt.wait)
	cl, err := claimWaiting(cctx, sv.s.api, sv.s.cfg.Project, sv.claimRequest(), sv.opt.wait)
	cancel()
	if err != nil {
		if errors.Is(err, client.ErrNothingReady) {
			span.SetAttributes(telemetry.AttrOutcome.String("nothing_ready"))
		} else {
			span.SetStatus(codes.Error, err.Error())
		}
		return outcome{}, err
	}
	if span.IsRecording() {
		span.SetAttributes(telemetry.AttrProject.String(cl.Item.ProjectID), telemetry.AttrItem.String(cl.Item.ID),
			telemetry.AttrLease.String(cl.Lease.ID), telemetry.AttrEpoch.Int64(cl.Lease.Epoch),
			attribute.String("workgraph.worker", sv.opt.worker))
	}
	out := sv.runOne(ctx, cl)
	span.SetAttributes(telemetry.AttrOutcome.String(string(out.kind)), attribute.Int("process.exit.code", out.exitCode))
	if out.kind == outcomeError || out.kind == outcomeSetup {
		span.SetStatus(codes.Error, out.message)
	}
	return out, nil
}

// claimGrace is how long a claim already sent may still be answered after
// the supervisor is interrupted.
const claimGrace = 5 * time.Second

// claimContext is the context the supervisor sends a claim on. Without a
// wait it outlives ctx's interruption by claimGrace: the server may have
// granted the lease already, and an answer read is a lease the supervisor
// knows and releases (runOne), where an answer dropped is a lease nobody
// works on until it expires. A long poll (wait > 0) ends with ctx at
// once: its answer may be far off, and only a grant at the very moment of
// the interruption is then left to expire.
func claimContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if wait > 0 {
		return context.WithCancel(ctx)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(claimGrace, cancel) })
	return cctx, func() {
		stop()
		cancel()
	}
}

// claimRequest is what the supervisor's claims ask for.
func (sv *supervisor) claimRequest() client.ClaimRequest {
	return client.ClaimRequest{Worker: sv.opt.worker, LeaseSeconds: seconds(sv.opt.ttl), Labels: sv.opt.labels,
		Capabilities: sv.opt.caps}
}

// nothingMore says that a loop ends because nothing more is ready, and,
// when it handled nothing, why the ready items were not its own.
// doneForNow reports whether a claim's error ends a --loop (without
// --wait) that handled done items as "nothing more": no_match, the ready
// items all requiring capabilities this worker lacks, is then other
// workers' work. Before any item, or with --wait, no_match is an error
// (exit 6: waiting would not help).
func (sv *supervisor) doneForNow(err error, done int) bool {
	return errors.Is(err, client.ErrNoMatch) && sv.opt.loop && sv.opt.wait == 0 && done > 0
}

func (sv *supervisor) nothingMore(ctx context.Context, done int) {
	sv.logf("nothing more is ready; %d item(s) handled", done)
	if done > 0 {
		return
	}
	why, err := sv.s.api.NotClaimedReasons(ctx, sv.s.cfg.Project, sv.claimRequest(), fmtTime)
	if err != nil {
		return
	}
	for _, line := range why {
		sv.logf("why: %s", line)
	}
}

func (sv *supervisor) logf(format string, args ...any) {
	fmt.Fprintf(sv.s.Err, "workgraph work: "+format+"\n", args...)
}
