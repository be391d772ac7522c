package db

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Precheck is a statement that must succeed before any statement of a
// request commits, carried by the request's first round trip instead of
// costing one of its own: the API's bearer token check (auth.Service.Lazy,
// SQL function token_still_valid, which raises WG006 when it fails). A
// Carrier sends it at the head of the request's first statement or batch,
// in the same implicit transaction, so a refusal aborts that statement and
// nothing of it commits; every later statement of the request then fails
// with the same refusal without being sent. Run judges it alone (one round
// trip) for a request that reached no statement of its own.
//
// A Precheck belongs to one request; its methods are safe for concurrent
// use, and a statement sent while the first round trip is judging it waits
// for the verdict.
type Precheck struct {
	stmts []queued
	// parent is a check added before (AddPrecheck): it goes first, and a
	// refusal of it is this one's too.
	parent *Precheck

	mu sync.Mutex
	// judged: the check ran; err is its refusal (translated), nil when it
	// passed.
	judged bool
	err    error
}

// NewPrecheck returns a pending check of one statement: sql must raise
// WG006 (request_precondition) when the check fails (its answer is not
// read).
func NewPrecheck(sql string, args ...any) *Precheck {
	return &Precheck{stmts: []queued{{sql: sql, args: args}}}
}

type precheckKey struct{}

// WithPrecheck returns ctx carrying p: every statement a Carrier sends with
// that context carries p, or fails with its refusal.
func WithPrecheck(ctx context.Context, p *Precheck) context.Context {
	return context.WithValue(ctx, precheckKey{}, p)
}

// AddPrecheck returns ctx carrying a check of fn's statements (recorded,
// as a Pipeline's followers: generated :exec queries that raise WG006 to
// refuse) after the check ctx carried, which goes first and whose refusal
// is the new one's too. The check ctx carried keeps its own verdict: a
// refusal of the added statements alone leaves it passed.
func AddPrecheck(ctx context.Context, fn func(q DBTX) error) (context.Context, error) {
	var rec recorder
	if err := fn(&rec); err != nil {
		return ctx, err
	}
	return WithPrecheck(ctx, &Precheck{stmts: rec.queued, parent: PrecheckFrom(ctx)}), nil
}

type recheckKey struct{}

// WithRecheck returns ctx carrying a check (sql and args as NewPrecheck's)
// that a request which acts again after waiting (a long-poll claim) must
// pass afresh at each later attempt: Rearm adds it, not yet judged, to the
// checks the attempt's first statement carries. A Precheck is judged once,
// by the request's first round trip; what it checks (the token is not
// revoked) may change while the request waits.
func WithRecheck(ctx context.Context, sql string, args ...any) context.Context {
	return context.WithValue(ctx, recheckKey{}, queued{sql: sql, args: args})
}

// Rearm returns ctx with the check of WithRecheck added after the checks
// ctx carries (as AddPrecheck adds statements), so that the next statement
// sent with the returned context carries it again and fails with its
// refusal; ctx itself when it carries no recheck. Call it on the
// request's own context before each attempt after the first.
func Rearm(ctx context.Context) context.Context {
	q, ok := ctx.Value(recheckKey{}).(queued)
	if !ok {
		return ctx
	}
	return WithPrecheck(ctx, &Precheck{stmts: []queued{q}, parent: PrecheckFrom(ctx)})
}

// PrecheckFrom returns the Precheck ctx carries, or nil.
func PrecheckFrom(ctx context.Context) *Precheck {
	p, _ := ctx.Value(precheckKey{}).(*Precheck)
	return p
}

// Verdict reports whether p has run and, if it has, its refusal (nil: it
// passed).
func (p *Precheck) Verdict() (judged bool, err error) {
	for q := p; q != nil; q = q.parent {
		q.mu.Lock()
		judged, err = q.judged, q.err
		q.mu.Unlock()
		if !judged || err != nil {
			return judged, err
		}
	}
	return true, nil
}

// Run judges p on q when it has not run yet (one batch when q is a
// Batcher), and returns its refusal (translated; nil when it passed). An
// error that is not a verdict (the database unavailable) is returned and
// leaves p pending. q must not be a Carrier of p's context.
func (p *Precheck) Run(ctx context.Context, q DBTX) error {
	ps, err := p.begin()
	if len(ps) == 0 {
		return err
	}
	if b, ok := q.(Batcher); ok {
		batch := &pgx.Batch{}
		ps.queue(batch)
		br := b.SendBatch(ctx, batch)
		i, err := ps.read(br)
		if cerr := br.Close(); err == nil && cerr != nil {
			i, err = len(ps)-1, cerr
		}
		return ps.settle(i, err)
	}
	for i, pc := range ps {
		for _, st := range pc.stmts {
			if _, err = q.Exec(ctx, st.sql, st.args...); err != nil {
				return ps.settle(i, err)
			}
		}
	}
	return ps.settle(0, nil)
}

// SettlePrechecks judges the checks ctx carries that no statement has
// carried yet, in a round trip of their own (Run) on ex, or on its pool
// when ex is a Carrier; nothing when ctx carries none or all were judged
// (then the refusal, if one was refused). For a request that must know the
// verdict before it waits without a statement of its own: a long-poll
// claim that joins the wait (lease.ClaimWait).
func SettlePrechecks(ctx context.Context, ex DBTX) error {
	p := PrecheckFrom(ctx)
	if p == nil {
		return nil
	}
	if c, ok := ex.(*Carrier); ok {
		return p.Run(ctx, c.pool)
	}
	return p.Run(ctx, ex)
}

// pendingChecks are the checks a round trip carries, root first, locked
// from begin to settle.
type pendingChecks []*Precheck

// begin locks and returns the checks of p's chain still to be judged, root
// first; none when all passed or one was refused (then its refusal).
func (p *Precheck) begin() (pendingChecks, error) {
	var chain []*Precheck
	for q := p; q != nil; q = q.parent {
		chain = append(chain, q)
	}
	slices.Reverse(chain)
	var ps pendingChecks
	for _, q := range chain {
		q.mu.Lock()
		if !q.judged {
			ps = append(ps, q)
			continue
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			ps.settle(-1, nil)
			return nil, err
		}
	}
	return ps, nil
}

// queue adds the checks' statements to b.
func (ps pendingChecks) queue(b *pgx.Batch) {
	for _, p := range ps {
		for _, st := range p.stmts {
			b.Queue(st.sql, st.args...)
		}
	}
}

// read reads the answers of the checks' statements from br: the index of
// the check whose statement failed first, and its error.
func (ps pendingChecks) read(br pgx.BatchResults) (int, error) {
	for i, p := range ps {
		for range p.stmts {
			if _, err := br.Exec(); err != nil {
				return i, err
			}
		}
	}
	return 0, nil
}

// settle records the outcome (err of check failed, as the driver answered
// it; nil: all passed) and unlocks the checks. The checks before the
// failed one passed; the failed one is refused when err is a refusal,
// else it and those after it stay pending. It returns the translated
// error. failed < 0 only unlocks.
func (ps pendingChecks) settle(failed int, err error) error {
	defer func() {
		for _, p := range ps {
			p.mu.Unlock()
		}
	}()
	if failed < 0 {
		return nil
	}
	if err == nil {
		failed = len(ps)
	}
	for _, p := range ps[:failed] {
		p.judged = true
	}
	if err == nil {
		return nil
	}
	err = Translate(err)
	if PrecheckRefused(err) {
		ps[failed].judged, ps[failed].err = true, err
	}
	return err
}

// PrecheckRefused reports whether err (translated or not) is a Precheck's
// refusal (WG006).
func PrecheckRefused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "WG006"
}

// PrecheckRefusal is the kind a Precheck's refusal names (the DETAIL of
// request_precondition: unauthenticated, conflict, idempotency_taken), or
// "" when err is none.
func PrecheckRefusal(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "WG006" {
		return pgErr.Detail
	}
	return ""
}

// Carrier is an Executor (and a Batcher) over a pool that makes a
// context's pending Precheck ride along with the first statement sent with
// it. A statement of its own goes as a two-statement batch (the check,
// then it: one round trip). A statement with a query execution mode as its
// first argument (CustomPlan) goes in the batch without it, the check
// setting plan_cache_mode to force_custom_plan for the batch's implicit
// transaction instead, so it is planned for its parameters as CustomPlan
// promises. A batch gets the check at its head. A transaction (Begin) is
// preceded by the check alone. Without a pending check every call goes
// straight to the pool.
type Carrier struct {
	pool interface {
		Executor
		Batcher
	}
}

// Carrying returns pool as a Carrier.
func Carrying(pool interface {
	Executor
	Batcher
}) *Carrier {
	return &Carrier{pool: pool}
}

var (
	_ Executor = (*Carrier)(nil)
	_ Batcher  = (*Carrier)(nil)
)

// customPlanSetting gives the statements after it in a batch, up to the
// batch's Sync, a plan for their parameters (CustomPlan's promise): the
// local setting lasts to the end of the batch's implicit transaction.
const customPlanSetting = "SELECT set_config('plan_cache_mode', 'force_custom_plan', true)"

// withoutExecMode strips a query execution mode (CustomPlan's) from args,
// which a batch cannot carry, and says whether there was one.
func withoutExecMode(args []any) ([]any, bool) {
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			return args[1:], true
		}
	}
	return args, false
}

// pending returns the checks ctx's round trip must carry (locked), or the
// refusal every statement of a refused request fails with.
func pending(ctx context.Context) (pendingChecks, error) {
	p := PrecheckFrom(ctx)
	if p == nil {
		return nil, nil
	}
	return p.begin()
}

// send queues the checks and the statement and reads the checks' answers.
func (c *Carrier) send(ctx context.Context, ps pendingChecks, sql string, args []any) (pgx.BatchResults, error) {
	args, custom := withoutExecMode(args)
	b := &pgx.Batch{}
	ps.queue(b)
	if custom {
		b.Queue(customPlanSetting)
	}
	b.Queue(sql, args...)
	br := c.pool.SendBatch(ctx, b)
	err := ps.settle(ps.read(br))
	if err == nil && custom {
		_, err = br.Exec()
		err = Translate(err)
	}
	if err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// Exec is part of DBTX.
func (c *Carrier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ps, err := pending(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if len(ps) == 0 {
		return c.pool.Exec(ctx, sql, args...)
	}
	br, err := c.send(ctx, ps, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query is part of DBTX.
func (c *Carrier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ps, err := pending(ctx)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return c.pool.Query(ctx, sql, args...)
	}
	br, err := c.send(ctx, ps, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is part of DBTX.
func (c *Carrier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ps, err := pending(ctx)
	if err != nil {
		return errRow{err}
	}
	if len(ps) == 0 {
		return c.pool.QueryRow(ctx, sql, args...)
	}
	br, err := c.send(ctx, ps, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// SendBatch is part of Batcher: the check goes at the batch's head.
func (c *Carrier) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ps, err := pending(ctx)
	if err != nil {
		return failedBatch{err}
	}
	if len(ps) == 0 {
		return c.pool.SendBatch(ctx, b)
	}
	carried := &pgx.Batch{}
	ps.queue(carried)
	carried.QueuedQueries = append(carried.QueuedQueries, b.QueuedQueries...)
	br := c.pool.SendBatch(ctx, carried)
	if err = ps.settle(ps.read(br)); err != nil {
		br.Close()
		return failedBatch{err}
	}
	return br
}

// Begin is part of Beginner: the check runs alone first.
func (c *Carrier) Begin(ctx context.Context) (pgx.Tx, error) {
	if p := PrecheckFrom(ctx); p != nil {
		if err := p.Run(ctx, c.pool); err != nil {
			return nil, err
		}
	}
	return c.pool.Begin(ctx)
}

// BeginTx begins a transaction with options (InReadTx), after the check.
func (c *Carrier) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	if p := PrecheckFrom(ctx); p != nil {
		if err := p.Run(ctx, c.pool); err != nil {
			return nil, err
		}
	}
	if b, ok := c.pool.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.pool.Begin(ctx)
}

// batchRows closes the carrying batch with the rows.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// batchRow closes the carrying batch once scanned.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// failedBatch answers every result with err.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return errRow{f.err} }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }
