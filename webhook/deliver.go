package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Defaults of DelivererConfig.
const (
	DefaultPoll = 50 * time.Millisecond
	// DefaultIdlePoll is how often a replica looks while no webhook is
	// enabled anywhere: no delivery can be due then, and a server that
	// nobody configured webhooks on should not query its database 20
	// times a second for nothing.
	DefaultIdlePoll     = time.Second
	DefaultConcurrency  = 32
	DefaultRetryFor     = 24 * time.Hour
	DefaultDisableAfter = 24 * time.Hour
	// DefaultPerWebhook bounds the attempts in flight of one webhook,
	// across replicas: a receiver that hangs holds at most this many
	// attempt slots, whatever the rate of its events.
	DefaultPerWebhook = 16
	// breakerAfter is the length of a webhook's run of failures (failed
	// attempts since its last success) from which the webhook is paused
	// as a whole, Backoff(1), Backoff(2), ... after each further failure,
	// and tried one attempt at a time until a success ends the run.
	breakerAfter = 3
	// maxBackoff caps the wait between two attempts (and a Retry-After).
	maxBackoff = time.Hour
	// firstBackoff is the wait after a first failed attempt; each further
	// failure doubles it (with jitter) up to maxBackoff.
	firstBackoff = 5 * time.Second
	// responseBytes is how much of an answer is kept per attempt.
	responseBytes = 1024
	// fanOutBatch bounds the delivery rows one fan-out statement makes.
	fanOutBatch = 500
	// behindBatch bounds the webhooks one round fans out, and the projects
	// whose due deliveries it takes.
	behindBatch = 1000
	// dueScan times Concurrency bounds the projects with due work one
	// round finds to claim in.
	dueScan = 4
	// horizonWait bounds one round's wait for the log's horizon: a
	// transaction that runs long anywhere in the database cluster holds
	// the horizon back, and the round then delivers what is due (retries)
	// and fans out next round.
	horizonWait = 30 * time.Second
)

// ErrHorizonDelayed is a round's error when the event log's horizon did
// not settle in time: a transaction that runs long anywhere in the
// database cluster holds it back (see events.Horizon). The round still
// attempted the due deliveries; the next round fans out again.
var ErrHorizonDelayed = errors.New("webhook: the event log's horizon did not settle")

// DelivererConfig tunes a Deliverer. Zero fields take the defaults.
type DelivererConfig struct {
	// Clock decides what "now" is for due times, locks, the day of
	// retries and disabling (nil: the database's clock).
	Clock clock.Clock
	// Local is the process clock of the webhook-timestamp header and of
	// the latency recorded (nil: the system clock).
	Local clock.Local
	Log   *slog.Logger
	// AllowPrivate lets delivery reach loopback, link-local and private
	// addresses (--webhooks-allow-private).
	AllowPrivate bool
	// Client sends the requests (nil: NewClient(AllowPrivate, Timeout)).
	Client *http.Client
	// Timeout bounds one attempt (0: RequestTimeout).
	Timeout time.Duration
	// Lock is how long a replica holds a delivery for one attempt, by the
	// database's clock (0: twice Timeout plus one second). A replica that
	// dies mid-attempt frees it when this passes; the event is then sent
	// again with the same webhook-id.
	Lock time.Duration
	// Poll is how often an idle replica looks for work (0: DefaultPoll).
	Poll time.Duration
	// IdlePoll is how often it looks while no webhook is enabled (0:
	// DefaultIdlePoll). A webhook created or enabled through this
	// replica's Service wakes it at once (Service.OnEnabled); one stored
	// through another replica is found within IdlePoll.
	IdlePoll time.Duration
	// Concurrency bounds the attempts in flight on this replica, and so
	// the rows one claim takes (0: DefaultConcurrency).
	Concurrency int
	// PerWebhook bounds the attempts in flight of one webhook over every
	// replica (0: DefaultPerWebhook); 1 while the webhook's run of
	// failures is breakerAfter long or longer. Replicas must agree on it:
	// each claim counts the attempts of all of them against its own.
	PerWebhook int
	// RetryFor is how long after its event a delivery is retried (0:
	// DefaultRetryFor); DisableAfter how long a webhook may fail without a
	// success before it is disabled (0: DefaultDisableAfter).
	RetryFor     time.Duration
	DisableAfter time.Duration
	// Backoff is the wait before the attempt after failed attempt n (1,
	// 2, ...); nil: exponential from 5 s, doubling up to 1 h, with full
	// jitter on the upper half.
	Backoff func(n int) time.Duration
	// PublicURL is the web UI's base URL for the links of a message
	// (empty: no links).
	PublicURL string
	// Attention describes the request of an attention event (nil: no
	// request in messages).
	Attention *attention.Service
	// Links issues answer links (nil: none).
	Links *AnswerLinks
	// Observe is told of every attempt as it ended (nil: nobody), from a
	// delivery goroutine (the attempt's, or its claim's once the claim's
	// successes are recorded together): the server counts them in
	// /metrics.
	Observe func(Attempt)
}

// Deliverer is the background service that delivers the event log to
// webhooks. Any number run at once, one a replica: fan-out locks the
// webhook row it advances, and each delivery is taken for one attempt
// with FOR UPDATE SKIP LOCKED and a lock of the database's clock.
//
// The loop never waits for a receiver: its attempts run beside it, at
// most Concurrency at once (the replica's slots), and each round fans out
// and hands due deliveries to the slots that are free, so a slow or
// hanging receiver holds its own attempts' slots, never the other
// webhooks' deliveries; and no more than PerWebhook of them over every
// replica, so it holds a few slots, not every one of a replica, however
// fast its events come. A receiver that keeps failing is paused as a
// whole (see pause).
type Deliverer struct {
	base   startstop.Base
	pool   *pgxpool.Pool
	cfg    DelivererConfig
	client *http.Client
	wake   chan struct{}
	// slots holds one token per attempt in flight on this replica.
	slots chan struct{}
	// inflight counts the attempts (and their recording) the loop's
	// rounds started; the loop waits for them before it returns.
	inflight sync.WaitGroup
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals DelivererSignals
}

// DelivererSignals are the test signals of a Deliverer.
type DelivererSignals struct {
	// Round is sent after every round of work with what it did.
	Round startstop.Signal[Round]
	// Attempted is sent after every attempt with its result.
	Attempted startstop.Signal[Attempt]
}

// Round is what one round of the loop did.
type Round struct {
	// FannedOut is the number of delivery rows made; Attempts the
	// deliveries whose attempts the round started (RunOnce also waited
	// for them; the loop's rounds do not).
	FannedOut int
	Attempts  int
	// NoWebhooks: no webhook was enabled, so the round looked for no due
	// delivery, and the loop waits IdlePoll (or a wake) before the next.
	NoWebhooks bool
	Err        error
}

// Attempt is the result of one delivery attempt.
type Attempt struct {
	ProjectID uuid.UUID
	WebhookID uuid.UUID
	Seq       int64
	N         int
	// State is what the delivery became: pending (retried later),
	// delivered or failed; "" when the result was not recorded (the
	// lock was lost first, or the database failed).
	State   string
	Status  int
	Err     string
	Latency time.Duration
	// Sent: a request was made (Latency is the receiver's); Refused: the
	// address guard refused the webhook's address; Disabled: this
	// attempt's failure disabled the webhook; Paused: its failure paused
	// the webhook as a whole (or made its pause longer).
	Sent     bool
	Refused  bool
	Disabled bool
	Paused   bool
	// Released: the attempt was cut short by this replica's stop before
	// an answer came; the delivery was given back unrecorded (State ""),
	// to be sent again by the next round of any replica, and its
	// receiver was charged no failure.
	Released bool
}

// NewDeliverer returns a Deliverer on pool.
func NewDeliverer(pool *pgxpool.Pool, cfg DelivererConfig) *Deliverer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Database{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = RequestTimeout
	}
	if cfg.Lock <= 0 {
		cfg.Lock = 2*cfg.Timeout + time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.IdlePoll <= 0 {
		cfg.IdlePoll = DefaultIdlePoll
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PerWebhook <= 0 {
		cfg.PerWebhook = DefaultPerWebhook
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	client := cfg.Client
	if client == nil {
		client = newClient(cfg.AllowPrivate, cfg.Timeout, cfg.Concurrency)
	}
	return &Deliverer{pool: pool, cfg: cfg, client: client, wake: make(chan struct{}, 1),
		slots: make(chan struct{}, cfg.Concurrency)}
}

// Backoff is the default wait after failed attempt n: 5 s doubled per
// further failure, capped at an hour, drawn uniformly from its upper half
// (jitter, so that deliveries that failed together do not retry together).
func Backoff(n int) time.Duration {
	d := maxBackoff
	if n < 20 {
		d = min(firstBackoff<<(n-1), maxBackoff)
	}
	return d/2 + rand.N(d/2+1)
}

// maxRoundBackoff bounds the wait after failed rounds.
const maxRoundBackoff = 5 * time.Second

// Start runs rounds until ctx ends or Stop: at once, then whenever woken
// (Wake, an attempt ending, or successes recorded) or every Poll, and
// back to back while fan-out finds work. A round does not wait for the
// attempts it starts (see Deliverer); Stop waits for them. After a
// failed round (the database away) it waits twice as long as after the
// one before, from Poll up to maxRoundBackoff, and is not woken early, so
// an outage costs a few statements and log lines (warn while the
// database is unavailable) a second, not one every Poll.
func (d *Deliverer) Start(ctx context.Context) {
	d.base.Run(ctx, func(ctx context.Context) {
		defer d.inflight.Wait()
		wait := d.cfg.Poll
		for ctx.Err() == nil {
			r := d.round(ctx, &d.inflight, false)
			if ctx.Err() != nil {
				return
			}
			switch {
			case errors.Is(r.Err, ErrHorizonDelayed):
				d.cfg.Log.Warn("webhook delivery waits for the event log", "err", r.Err)
			case r.Err != nil && wgerr.RetryLater(wgerr.CodeOf(r.Err)):
				d.cfg.Log.Warn("webhook delivery: the database is unavailable", "err", r.Err, "retry_in", wait)
			case r.Err != nil:
				d.cfg.Log.Error("webhook delivery", "err", r.Err, "retry_in", wait)
			}
			d.TestSignals.Round.Send(r)
			// A round that fanned out goes on at once: more of the log
			// may wait. One that only started attempts waits for a wake:
			// what it left due waits for a free slot or for an attempt
			// of its webhook to be recorded (PerWebhook), and each wakes
			// the loop (or Poll passes, for work that fell due).
			if r.Err == nil && r.FannedOut > 0 {
				wait = d.cfg.Poll
				continue
			}
			if r.Err == nil && r.NoWebhooks {
				wait = d.cfg.IdlePoll
			}
			t := time.NewTimer(wait)
			wake := d.wake
			if r.Err != nil && !errors.Is(r.Err, ErrHorizonDelayed) {
				wait, wake = min(2*wait, max(maxRoundBackoff, d.cfg.Poll)), nil
			} else {
				wait = d.cfg.Poll
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			case <-wake:
			}
			t.Stop()
		}
	})
}

// Stop stops the loop and waits for the attempts in flight: their
// requests are cancelled, and an attempt so cut before its answer came is
// released, not recorded (Attempt.Released), so a replica's stop never
// counts as a failure of a receiver; the results that came are recorded.
func (d *Deliverer) Stop() { d.base.Stop() }

// Wake makes the loop look for work now (an event was written).
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// RunOnce does one round: fans out the events up to the log's horizon to
// the webhooks behind it, then attempts the deliveries due now (waiting
// for a free slot when none is), and waits for those attempts. Tests call
// it instead of waiting for the loop.
func (d *Deliverer) RunOnce(ctx context.Context) Round {
	var wg sync.WaitGroup
	defer wg.Wait()
	return d.round(ctx, &wg, true)
}

// round fans out, then starts the due deliveries' attempts, counted in
// wg, without waiting for them. block: wait for a free slot when none
// is; else a round with every slot busy only fans out.
func (d *Deliverer) round(ctx context.Context, wg *sync.WaitGroup, block bool) Round {
	var r Round
	var fanErr, dueErr error
	var anyEnabled bool
	r.FannedOut, anyEnabled, fanErr = d.fanOut(ctx)
	if fanErr == nil && !anyEnabled {
		// Only an enabled webhook's deliveries are ever due (a disabled
		// one's are parked).
		r.NoWebhooks = true
		return r
	}
	r.Attempts, dueErr = d.deliverDue(ctx, wg, block)
	r.Err = errors.Join(fanErr, dueErr)
	return r
}

// fanOut makes the delivery rows of every enabled webhook behind the
// horizon, and tells whether any webhook is enabled (true when it failed
// before it knew).
func (d *Deliverer) fanOut(ctx context.Context) (int, bool, error) {
	st, err := q.WebhooksBehindAny(ctx, d.pool)
	if err != nil {
		return 0, true, db.Translate(err)
	}
	if !st.Behind {
		return 0, st.AnyEnabled, nil
	}
	hctx, cancel := context.WithTimeout(ctx, horizonWait)
	h, err := events.Horizon(hctx, d.pool)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return 0, true, fmt.Errorf("%w within %s (a long transaction in the database cluster holds it back)", ErrHorizonDelayed, horizonWait)
		}
		return 0, true, err
	}
	hooks, err := q.WebhooksBehind(ctx, d.pool, dbq.WebhooksBehindParams{UpTo: h, MaxRows: behindBatch})
	if err != nil {
		return 0, true, db.Translate(err)
	}
	total := 0
	for _, w := range hooks {
		// One statement: its own transaction, in the webhook's project.
		n, err := q.FanOutWebhook(ctx, d.pool, dbq.FanOutWebhookParams{
			ProjectID: w.ProjectID, ID: w.ID, UpTo: h, MaxRows: fanOutBatch, Now: d.cfg.Clock.Now(),
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // another replica is fanning it out, or it was disabled
		}
		if err != nil {
			return total, true, db.Translate(err)
		}
		total += int(n)
	}
	return total, true, nil
}

// deliverDue takes the due deliveries project by project and starts their
// attempts (counted in wg), at most Concurrency in flight on the replica.
// A claim takes only as many rows as there are free slots, so every row
// claimed is sent at once and its lock (Lock, over twice Timeout)
// outlasts its attempt and the recording of its result. block: wait for
// a slot when none is free; else stop claiming.
func (d *Deliverer) deliverDue(ctx context.Context, wg *sync.WaitGroup, block bool) (int, error) {
	if !block && len(d.slots) == cap(d.slots) {
		return 0, nil // every slot busy: their endings wake the loop
	}
	projects, err := q.DueDeliveryProjects(ctx, d.pool, dbq.DueDeliveryProjectsParams{
		Now: d.cfg.Clock.Now(), MaxInFlight: int32(d.cfg.PerWebhook), TripAfter: breakerAfter,
		MaxProjects: int32(dueScan * d.cfg.Concurrency),
	})
	if err != nil {
		return 0, db.Translate(err)
	}
	slots := d.slots
	total := 0
	for _, p := range projects {
		var free int
		if block {
			free = takeSlots(slots)
		} else if free = takeFreeSlots(slots); free == 0 {
			break
		}
		token := uuid.New()
		claimed, err := d.claim(ctx, p, token, free)
		for range free - len(claimed) {
			<-slots
		}
		if err != nil {
			return total, db.Translate(err)
		}
		total += len(claimed)
		done := &delivered{project: p, token: token, ready: make(chan struct{}, 1)}
		var claim sync.WaitGroup
		for _, c := range claimed {
			claim.Add(1)
			go func() {
				defer claim.Done()
				batched := d.attempt(ctx, c, token, done)
				<-slots
				if !batched {
					d.Wake() // a batched success wakes the loop once recorded
				}
			}()
		}
		claimEnded := make(chan struct{})
		go func() { claim.Wait(); close(claimEnded) }()
		// The claim's successes are recorded as they come (those that
		// come together, in one statement), not after its slowest
		// attempt: a receiver's event is not left pending because
		// another receiver of the claim takes its time.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done.ready:
					d.recordDelivered(ctx, done)
				case <-claimEnded:
					d.recordDelivered(ctx, done)
					return
				}
			}
		}()
	}
	return total, nil
}

// claim takes up to max due deliveries of project p under lock token, at
// most PerWebhook in flight per webhook over every replica: one
// transaction locks the webhooks it claims for (LockDeliveringWebhooks),
// then claims with a snapshot that sees every attempt in flight of them
// (ClaimDeliveries: under READ COMMITTED, the isolation of every
// transaction here, its snapshot is taken after the locks were granted,
// so after any other claim of those webhooks committed). One statement
// could not do it: its snapshot predates the locks it waits for or takes.
func (d *Deliverer) claim(ctx context.Context, p, token uuid.UUID, max int) ([]dbq.ClaimDeliveriesRow, error) {
	var claimed []dbq.ClaimDeliveriesRow
	err := db.InTx(ctx, d.pool, func(tx pgx.Tx) error {
		now := d.cfg.Clock.Now()
		hooks, err := q.LockDeliveringWebhooks(ctx, tx, dbq.LockDeliveringWebhooksParams{ProjectID: p, Now: now})
		if err != nil || len(hooks) == 0 {
			claimed = nil
			return err
		}
		claimed, err = q.ClaimDeliveries(ctx, tx, dbq.ClaimDeliveriesParams{
			ProjectID: p, WebhookIds: hooks, MaxInFlight: int32(d.cfg.PerWebhook), TripAfter: breakerAfter,
			LockToken: token, LockSeconds: d.cfg.Lock.Seconds(), MaxRows: int32(max), Now: now,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// takeSlots waits for one free slot of slots, takes every other free one
// too, and returns how many it took.
func takeSlots(slots chan struct{}) int {
	slots <- struct{}{}
	return 1 + takeFreeSlots(slots)
}

// takeFreeSlots takes every free slot of slots without waiting and
// returns how many it took (0: all busy).
func takeFreeSlots(slots chan struct{}) int {
	n := 0
	for {
		select {
		case slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
}

// delivered gathers the plain successes of one claim (delivered, the
// webhook not failing) until recordDelivered takes them.
type delivered struct {
	project uuid.UUID
	token   uuid.UUID
	// ready is signalled when a success is added.
	ready  chan struct{}
	mu     sync.Mutex
	list   []Attempt
	params dbq.FinishDeliveredParams
}

func (b *delivered) add(c dbq.ClaimDeliveriesRow, o outcome, a Attempt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := &b.params
	p.WebhookIds = append(p.WebhookIds, c.WebhookID)
	p.Seqs = append(p.Seqs, c.Seq)
	p.Attempts = append(p.Attempts, c.Attempts)
	p.Statuses = append(p.Statuses, *o.status)
	p.LatenciesMs = append(p.LatenciesMs, latencyMs(o.latency))
	response := ""
	if o.response != nil {
		response = *o.response
	}
	p.Responses = append(p.Responses, response)
	b.list = append(b.list, a)
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take returns the successes gathered since the last take and forgets
// them.
func (b *delivered) take() ([]Attempt, dbq.FinishDeliveredParams) {
	b.mu.Lock()
	defer b.mu.Unlock()
	list, params := b.list, b.params
	b.list, b.params = nil, dbq.FinishDeliveredParams{}
	return list, params
}

// recordDelivered records the plain successes of a claim gathered so far
// in one statement, even when the loop is being stopped (the requests were
// made), then reports each attempt. An attempt whose lock passed to
// another attempt first is not recorded (State "").
func (d *Deliverer) recordDelivered(ctx context.Context, b *delivered) {
	list, params := b.take()
	if len(list) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	params.ProjectID, params.LockToken, params.Now = b.project, b.token, d.cfg.Clock.Now()
	rows, err := q.FinishDelivered(rctx, d.pool, params)
	if err != nil {
		d.cfg.Log.Error("webhook delivery: recording attempts", "project", b.project, "attempts", len(list), "err", db.Translate(err))
	}
	// Their webhooks' attempts in flight (PerWebhook) are counted until
	// now: the loop looks for their next deliveries now, not at its next
	// poll (the attempts' own wakes came before this).
	d.Wake()
	type key struct {
		webhook uuid.UUID
		seq     int64
	}
	recorded := make(map[key]bool, len(rows))
	for _, r := range rows {
		recorded[key{r.WebhookID, r.Seq}] = true
	}
	for _, a := range list {
		if recorded[key{a.WebhookID, a.Seq}] {
			a.State = StateDelivered
		}
		d.report(a)
	}
}

func latencyMs(l time.Duration) int32 { return int32(min(l.Milliseconds(), 1<<31-1)) }

// outcome is what one request came to.
type outcome struct {
	state      string // pending (retry), delivered, failed
	status     *int32
	response   *string
	errText    *string
	retryAfter time.Duration
	latency    time.Duration
	// sent: a request was made; refused: the guard refused the address.
	sent, refused bool
	// failing: the webhook was in a run of failures when the attempt
	// began (a success must end it).
	failing bool
	// cut: the attempt was cut short by the server itself (its loop's
	// context ended: the replica is stopping) before an answer came. It
	// says nothing of the receiver: the delivery is released, not
	// recorded (ReleaseDelivery).
	cut bool
	// ours: the attempt ended before any request, for a reason of the
	// server's (the message could not be built, its event was deleted by
	// the retention): recorded, but no failure of the receiver's, so it
	// neither starts nor ends the webhook's run of failures.
	ours bool
	// gone: the receiver answered 410 Gone, asking for no more
	// deliveries: the webhook is disabled at once (ReasonGone).
	gone bool
}

// attempt sends one claimed delivery and records its result under the
// lock it was claimed with; a plain success (delivered, the webhook not
// failing) is left to its claim's recordDelivered (batched).
func (d *Deliverer) attempt(ctx context.Context, c dbq.ClaimDeliveriesRow, token uuid.UUID, done *delivered) (batched bool) {
	o := d.send(ctx, c)
	a := Attempt{ProjectID: c.ProjectID, WebhookID: c.WebhookID, Seq: c.Seq, N: int(c.Attempts), Latency: o.latency,
		Sent: o.sent, Refused: o.refused}
	if o.status != nil {
		a.Status = int(*o.status)
	}
	if o.errText != nil {
		a.Err = *o.errText
	}
	if o.state == StateDelivered && !o.failing {
		done.add(c, o, a)
		return true
	}
	if o.cut {
		d.release(ctx, c, token, a)
		return false
	}
	// Record the result even when the loop is being stopped: the request
	// was made.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	wait := d.cfg.Backoff(int(c.Attempts))
	if o.retryAfter > wait {
		wait = min(o.retryAfter, maxBackoff)
	}
	now := d.cfg.Clock.Now()
	finish := func(tx db.DBTX) error {
		state, err := q.FinishAttempt(rctx, tx, dbq.FinishAttemptParams{
			ProjectID: c.ProjectID, WebhookID: c.WebhookID, Seq: c.Seq, LockToken: token, Attempt: c.Attempts,
			NewState: o.state, RetryForSeconds: d.cfg.RetryFor.Seconds(), RetryInSeconds: wait.Seconds(),
			Status: o.status, LatencyMs: latencyMs(o.latency), Response: o.response,
			Error: o.errText, Now: now,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errLockLost // the lock expired and another attempt owns the row
		}
		a.State = state
		return err
	}
	err := db.InTx(rctx, d.pool, func(tx pgx.Tx) error {
		var err error
		a.Disabled, a.Paused, err = d.finishFailing(rctx, tx, c, o, now, finish)
		return err
	})
	if errors.Is(err, errLockLost) {
		err = nil
	}
	if err != nil {
		d.cfg.Log.Error("webhook delivery: recording an attempt", "project", c.ProjectID, "webhook", c.WebhookID, "seq", c.Seq, "err", err)
		a.State, a.Disabled, a.Paused = "", false, false // not recorded: counted as lost
	}
	if a.Disabled {
		why := "webhook disabled after failing for a day"
		if o.gone {
			why = "webhook disabled: its receiver answered 410 Gone"
		}
		d.cfg.Log.Warn(why, "project", c.ProjectID, "webhook", c.WebhookID)
		// Its pending deliveries wait for it out of the way of every other
		// webhook's, parked once the disabling committed (see the query);
		// if this fails they only cost the search for due work a row each.
		if err := q.ParkPendingDeliveries(rctx, d.pool, dbq.ParkPendingDeliveriesParams{
			ProjectID: c.ProjectID, WebhookID: c.WebhookID,
		}); err != nil {
			d.cfg.Log.Error("webhook delivery: parking a disabled webhook's deliveries", "project", c.ProjectID,
				"webhook", c.WebhookID, "err", db.Translate(err))
		}
	}
	d.report(a)
	return false
}

// release gives back a delivery whose attempt was cut by the server's own
// stop: nothing is recorded and the webhook's run of failures is left as
// it was, so a redeploy never counts against a receiver; the next round of
// any replica sends it again. Reported with State "" and Released.
func (d *Deliverer) release(ctx context.Context, c dbq.ClaimDeliveriesRow, token uuid.UUID, a Attempt) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.Timeout)
	defer cancel()
	n, err := q.ReleaseDelivery(rctx, d.pool, dbq.ReleaseDeliveryParams{
		ProjectID: c.ProjectID, WebhookID: c.WebhookID, Seq: c.Seq, LockToken: token, Attempt: c.Attempts,
	})
	if err != nil {
		// Its lock still frees it once Lock passes.
		d.cfg.Log.Warn("webhook delivery: releasing an attempt cut by the stop", "project", c.ProjectID,
			"webhook", c.WebhookID, "seq", c.Seq, "err", db.Translate(err))
	}
	a.Released = err == nil && n == 1
	d.report(a)
}

// report tells the observer and the test signal of an attempt as it
// ended.
func (d *Deliverer) report(a Attempt) {
	if d.cfg.Observe != nil {
		d.cfg.Observe(a)
	}
	d.TestSignals.Attempted.Send(a)
}

// errLockLost: an attempt's result came after its lock passed to another
// attempt; it is not recorded.
var errLockLost = errors.New("webhook: the delivery's lock was lost")

// finishFailing records an attempt of a webhook in (or entering, or
// leaving) a run of failures: the attempt, then the webhook's run, which a
// day of failures ends by disabling it. disabled: this attempt disabled
// it; paused: it paused it (see pause) (the transaction's commit makes
// either so). A delivery still pending
// whose webhook is disabled (now, or by another attempt or a person while
// this one was in flight) is parked with the webhook's others.
func (d *Deliverer) finishFailing(ctx context.Context, tx pgx.Tx, c dbq.ClaimDeliveriesRow, o outcome, now *time.Time, finish func(db.DBTX) error) (disabled, paused bool, err error) {
	if err := finish(tx); err != nil {
		return false, false, err
	}
	if o.ours {
		return false, false, nil
	}
	if o.state == StateDelivered {
		return false, false, q.WebhookSucceeded(ctx, tx, dbq.WebhookSucceededParams{ProjectID: c.ProjectID, ID: c.WebhookID})
	}
	reason, after := ReasonFailing, d.cfg.DisableAfter
	if o.gone {
		// The receiver said it wants nothing more (Standard Webhooks):
		// a run of failures that has lasted long enough at once.
		reason, after = ReasonGone, 0
	}
	run, err := q.WebhookFailed(ctx, tx, dbq.WebhookFailedParams{
		ProjectID: c.ProjectID, ID: c.WebhookID, Now: now, Reason: reason,
		DisableAfterSeconds: after.Seconds(),
	})
	if err != nil {
		return false, false, err
	}
	if run.Enabled {
		paused, err := d.pause(ctx, tx, c, o, now, int(run.ConsecutiveFailures))
		return false, paused, err
	}
	return run.DisabledNow, false, q.ParkDelivery(ctx, tx, dbq.ParkDeliveryParams{
		ProjectID: c.ProjectID, WebhookID: c.WebhookID, Seq: c.Seq,
	})
}

// pause backs a failing webhook off as a whole: once its run of failures
// is breakerAfter long, no attempt of it starts for Backoff(1), then
// Backoff(2), ... after each further failure (the claims then try it one
// attempt at a time); a Retry-After pauses it at once for as long (up to
// maxBackoff), the receiver having asked for it. Its deliveries keep
// their own schedule and wait for the pause to end besides. paused: a
// pause was set.
func (d *Deliverer) pause(ctx context.Context, tx pgx.Tx, c dbq.ClaimDeliveriesRow, o outcome, now *time.Time, failures int) (paused bool, err error) {
	var wait time.Duration
	if failures >= breakerAfter {
		wait = d.cfg.Backoff(failures - breakerAfter + 1)
	}
	if o.retryAfter > wait {
		wait = min(o.retryAfter, maxBackoff)
	}
	if wait <= 0 {
		return false, nil
	}
	err = q.PauseWebhook(ctx, tx, dbq.PauseWebhookParams{
		ProjectID: c.ProjectID, ID: c.WebhookID, PauseSeconds: wait.Seconds(), Now: now,
	})
	return err == nil, err
}

// send builds and sends one claimed delivery's request (the claim brought
// its webhook and its event).
func (d *Deliverer) send(ctx context.Context, row dbq.ClaimDeliveriesRow) outcome {
	if row.EventSeq == nil {
		o := failure(StateFailed, "not sent: the event was deleted by the events' retention (--events-retention) before it could be delivered")
		o.ours = true
		return o
	}
	failing := row.FailingSince != nil
	m, err := d.message(ctx, row.ProjectID, row)
	if err != nil && ctx.Err() != nil {
		return outcome{cut: true}
	}
	if err != nil {
		// A hiccup of the server's (its database): retried later, and
		// not held against the receiver.
		o := failure(StatePending, "not sent: building the message failed (retried): "+err.Error())
		o.ours = true
		return o
	}
	b, err := body(row.Format, m)
	if err != nil {
		return failure(StateFailed, "encoding the message: "+err.Error())
	}
	id := messageID(row.ProjectID, row.Seq)
	ts := d.cfg.Local.Read().Unix()
	sig, err := Sign(row.Secret, id, ts, b)
	if err != nil {
		return failure(StateFailed, err.Error())
	}
	if row.PreviousSecret != nil && row.PreviousSecretSigns {
		// A rotation's grace: the previous secret signs beside the new
		// one, so a receiver that still holds it accepts the delivery.
		old, err := Sign(*row.PreviousSecret, id, ts, b)
		if err != nil {
			return failure(StateFailed, err.Error())
		}
		sig += " " + old
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, row.Url, bytes.NewReader(b))
	if err != nil {
		return failure(StateFailed, "the webhook's URL: "+err.Error())
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "workgraph-webhooks/"+buildinfo.Get().Short())
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	start := d.cfg.Local.Read()
	resp, err := d.client.Do(req)
	latency := d.cfg.Local.Read().Sub(start)
	if err != nil && ctx.Err() != nil {
		// Our own stop cancelled the request, not the receiver's doing.
		return outcome{cut: true, sent: true, latency: latency}
	}
	if err != nil {
		o := failure(StatePending, requestError(err))
		if dialRefused(err) {
			o.state, o.refused = StateFailed, true
		} else {
			o.sent = true
		}
		o.latency, o.failing = latency, failing
		return o
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, responseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keep the connection reusable
	status := int32(resp.StatusCode)
	o := outcome{status: &status, latency: latency, failing: failing, sent: true}
	if len(head) > 0 {
		s := validPrefix(head)
		o.response = &s
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		o.state = StateDelivered
	case code == http.StatusTooManyRequests || code >= 500:
		o.state = StatePending
		o.retryAfter = retryAfter(resp.Header.Get("Retry-After"), d.cfg.Local.Read())
	case code == http.StatusGone:
		o.state, o.gone = StateFailed, true
		e := "410 Gone: the receiver wants no more deliveries; the webhook is disabled until someone enables it again"
		o.errText = &e
	case code >= 300 && code < 400:
		o.state = StateFailed
		e := "redirect not followed (" + resp.Header.Get("Location") + ")"
		o.errText = &e
	default:
		o.state = StateFailed
	}
	return o
}

// message is the data of one event for a webhook: the event, its links,
// and the request of an attention event (with an answer link when the
// project wants them, the webhook names a recipient and the request is
// answered in words; the item page's link serves the others).
func (d *Deliverer) message(ctx context.Context, project uuid.UUID, row dbq.ClaimDeliveriesRow) (Message, error) {
	m := Message{ProjectID: project, Project: row.ProjectName, Seq: *row.EventSeq, Type: *row.EventType,
		At: *row.EventAt, Actor: *row.Actor, ItemID: row.ItemID, LeaseID: row.LeaseID, AttentionID: row.AttentionID,
		Payload: row.Payload}
	if len(m.Payload) == 0 {
		m.Payload = []byte("{}")
	}
	m.Links = pageLinks(d.cfg.PublicURL, m)
	if m.AttentionID == nil || d.cfg.Attention == nil {
		return m, nil
	}
	r, err := d.cfg.Attention.Get(ctx, project, *m.AttentionID)
	if err != nil {
		return m, err
	}
	m.Attention = &AttentionInfo{Question: r.Question, ItemTitle: r.ItemTitle, RequestedBy: r.RequestedBy,
		Reason: r.Reason, Blocking: r.Blocking, State: string(r.State)}
	wantsLink := (m.Type == events.AttentionOpened || m.Type == events.AttentionOverdue) && attention.AnsweredInWords(r.Reason)
	if !wantsLink || r.State != attention.StateOpen || d.cfg.Links == nil || row.Recipient == nil || m.Links == nil {
		return m, nil
	}
	settings, err := d.cfg.Links.Settings(ctx, project)
	if err != nil || !settings.AnswerLinks {
		return m, err
	}
	token, link, err := d.cfg.Links.Issue(ctx, project, r.ID, row.WebhookID, *row.Recipient, settings.AnswerLinkTTL)
	if err != nil {
		return m, err
	}
	m.Links.AnswerLink = AnswerLinkURL(d.cfg.PublicURL, project, token)
	m.Links.AnswerLinkExpires = &link.ExpiresAt
	return m, nil
}

// AnswerLinkURL is the web UI's address of an answer link.
func AnswerLinkURL(base string, project uuid.UUID, token string) string {
	return strings.TrimRight(base, "/") + "/answer/" + project.String() + "/" + token
}

func failure(state, text string) outcome {
	return outcome{state: state, errText: &text}
}

// requestError says why a request got no answer: a timeout, a refused
// address, or the transport's error.
func requestError(err error) string {
	var ne net.Error
	switch {
	case dialRefused(err):
		return "refused: " + err.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout: " + err.Error()
	}
	return "connection: " + err.Error()
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date against
// now), capped at maxBackoff: a valid wait longer than that (a number of
// seconds too large for any integer type, a date years ahead) is the
// cap, not ignored. 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if digits(v) {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil || s >= int64(maxBackoff/time.Second) {
			return maxBackoff // out of range means larger still
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxBackoff)
	}
	return 0
}

// digits reports whether v is one or more ASCII digits (delay-seconds).
func digits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

// validPrefix is b as text, cut before a partial UTF-8 character at its
// end and with invalid bytes replaced (the column is text).
func validPrefix(b []byte) string {
	for i := 0; i < 3 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return string(bytes.ToValidUTF8(bytes.ReplaceAll(b, []byte{0}, nil), []byte("\uFFFD")))
}
