package db

import (
	"context"
	"errors"
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
	sql  string
	args []any

	mu sync.Mutex
	// judged: the check ran; err is its refusal (translated), nil when it
	// passed.
	judged bool
	err    error
}

// NewPrecheck returns a pending check: sql must be one statement that
// raises when the check fails (its answer is not read).
func NewPrecheck(sql string, args ...any) *Precheck {
	return &Precheck{sql: sql, args: args}
}

type precheckKey struct{}

// WithPrecheck returns ctx carrying p: every statement a Carrier sends with
// that context carries p, or fails with its refusal.
func WithPrecheck(ctx context.Context, p *Precheck) context.Context {
	return context.WithValue(ctx, precheckKey{}, p)
}

// PrecheckFrom returns the Precheck ctx carries, or nil.
func PrecheckFrom(ctx context.Context) *Precheck {
	p, _ := ctx.Value(precheckKey{}).(*Precheck)
	return p
}

// Verdict reports whether p has run and, if it has, its refusal (nil: it
// passed).
func (p *Precheck) Verdict() (judged bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.judged, p.err
}

// Run judges p alone on q when it has not run yet, and returns its
// refusal (translated; nil when it passed). An error that is not a verdict
// (the database unavailable) is returned and leaves p pending.
func (p *Precheck) Run(ctx context.Context, q DBTX) error {
	carry, err := p.begin()
	if !carry {
		return err
	}
	_, err = q.Exec(ctx, p.sql, p.args...)
	return p.settle(err)
}

// begin reports whether the caller's round trip must carry p; if so p.mu
// stays locked until settle. Otherwise it returns p's refusal, if any.
func (p *Precheck) begin() (carry bool, err error) {
	p.mu.Lock()
	if !p.judged {
		return true, nil
	}
	defer p.mu.Unlock()
	return false, p.err
}

// settle records the outcome of p's statement (err as the driver answered
// it) and unlocks p. It returns the translated error: the refusal, or the
// failure that left p pending.
func (p *Precheck) settle(err error) error {
	defer p.mu.Unlock()
	if err == nil {
		p.judged = true
		return nil
	}
	if PrecheckRefused(err) {
		p.judged, p.err = true, Translate(err)
		return p.err
	}
	return Translate(err)
}

// PrecheckRefused reports whether err (translated or not) is a Precheck's
// refusal (WG006).
func PrecheckRefused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "WG006"
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

// customPlanCheck is the precheck's statement when the statement it rides
// with asked for a custom plan: set_config's local setting lasts to the end
// of the batch's implicit transaction.
func customPlanCheck(sql string) string {
	return "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), (" + sql + ")"
}

// pending returns ctx's check when this call must carry it (p.mu held), or
// the refusal every statement of a refused request fails with.
func pending(ctx context.Context) (*Precheck, error) {
	p := PrecheckFrom(ctx)
	if p == nil {
		return nil, nil
	}
	carry, err := p.begin()
	if !carry {
		return nil, err
	}
	return p, nil
}

// send queues the check and the statement and reads the check's answer.
func (c *Carrier) send(ctx context.Context, p *Precheck, sql string, args []any) (pgx.BatchResults, error) {
	check := p.sql
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:]
			check = customPlanCheck(p.sql)
		}
	}
	b := &pgx.Batch{}
	b.Queue(check, p.args...)
	b.Queue(sql, args...)
	br := c.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err = p.settle(err); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// Exec is part of DBTX.
func (c *Carrier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p, err := pending(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if p == nil {
		return c.pool.Exec(ctx, sql, args...)
	}
	br, err := c.send(ctx, p, sql, args)
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
	p, err := pending(ctx)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return c.pool.Query(ctx, sql, args...)
	}
	br, err := c.send(ctx, p, sql, args)
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
	p, err := pending(ctx)
	if err != nil {
		return errRow{err}
	}
	if p == nil {
		return c.pool.QueryRow(ctx, sql, args...)
	}
	br, err := c.send(ctx, p, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// SendBatch is part of Batcher: the check goes at the batch's head.
func (c *Carrier) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	p, err := pending(ctx)
	if err != nil {
		return failedBatch{err}
	}
	if p == nil {
		return c.pool.SendBatch(ctx, b)
	}
	carried := &pgx.Batch{}
	carried.Queue(p.sql, p.args...)
	carried.QueuedQueries = append(carried.QueuedQueries, b.QueuedQueries...)
	br := c.pool.SendBatch(ctx, carried)
	_, err = br.Exec()
	if err = p.settle(err); err != nil {
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
