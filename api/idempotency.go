package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The idempotency store reads and writes the API's own table
// (idempotency_keys) directly: it is HTTP-layer state with no domain
// package to own it, and its rows never leave this file.

// IdempotencyHeader is the request header naming a retry-safe POST;
// ReplayedHeader marks an answer replayed from the store.
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
	// IdempotencyTTL is how long a key and its answer are kept.
	IdempotencyTTL = 24 * time.Hour
)

// Liveness of a record in progress: its owner (the request running it)
// locks it for idemLock by the database's clock and renews the lock every
// idemRenew while it runs. A record whose owner died is free for a retry
// at most idemLock later.
const (
	idemLock  = 5 * time.Second
	idemRenew = idemLock / 3
)

type idempotencyStore struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	q     *dbq.Queries
}

// idempotent makes a POST carrying an Idempotency-Key run at most once per
// (token, key): a retry with the same method, path and body gets the stored
// answer (same status and body, header Idempotent-Replayed: true); the same
// key with another request is refused as 409 conflict. While the first
// request runs, a retry is answered 409 request_in_progress with
// Retry-After; when its owner died (no lock renewal for idemLock) before
// its effect committed, the retry runs the request itself. When the effect
// committed but the answer was lost, a retry is answered 409
// outcome_unknown and nothing runs again. Answers that are not worth
// replaying (5xx, 429, a request that never finished) of requests that took
// no effect are forgotten so that a retry runs again.
func (a *API) idempotent(kind effectKind) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return a.idempotentAs(kind, next)
	}
}

// effectKind says which transactions of a request count as its effect.
type effectKind int

const (
	// effectWrites: any transaction that wrote.
	effectWrites effectKind = iota
	// effectLease: a transaction that granted a lease to the caller's token
	// (a claim); the lease is kept as the effect's reference, and a retry
	// whose answer was lost is answered from it (recoverClaim).
	effectLease
)

func (a *API) idempotentAs(kind effectKind, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(IdempotencyHeader)
		if req.Method != http.MethodPost || key == "" {
			return next(c)
		}
		if len(key) > 255 || strings.TrimSpace(key) == "" {
			return wgerr.InvalidField(IdempotencyHeader, "must be 1 to 255 visible characters")
		}
		body, err := readBody(c)
		if err != nil {
			return err
		}
		h := sha256.New()
		h.Write([]byte(req.Method + "\n" + req.URL.Path + "?" + req.URL.RawQuery + "\n"))
		h.Write(body)
		r := &idemRun{a: a, kind: kind, tokenID: principal(c).TokenID, key: key, hash: h.Sum(nil), owner: uuid.New()}

		// Bounded retries: a record may expire between the insert and the read.
		for range 3 {
			began, err := a.idem.q.BeginIdempotentRequest(req.Context(), a.idem.pool, dbq.BeginIdempotentRequestParams{
				TokenID: r.tokenID, Key: key, RequestHash: r.hash, Owner: &r.owner,
				LockSeconds: idemLock.Seconds(), Now: a.idem.clock.Now(),
			})
			if err != nil {
				return db.Translate(err)
			}
			if began == 1 {
				return r.run(c, next)
			}
			rec, err := a.idem.q.GetIdempotentRequest(req.Context(), a.idem.pool, dbq.GetIdempotentRequestParams{
				TokenID: r.tokenID, Key: key, Now: a.idem.clock.Now(),
			})
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return db.Translate(err)
			}
			if !bytes.Equal(rec.RequestHash, r.hash) {
				return wgerr.New(wgerr.CodeConflict, "Idempotency-Key %q was already used with a different request (method, path or body); use a new key for a new request", key)
			}
			if rec.Status == nil {
				if rec.EffectAt != nil && !rec.OwnerAlive {
					if kind == effectLease && rec.EffectRef != nil {
						return a.recoverClaim(c, *rec.EffectRef, key)
					}
					return &wgerr.Error{Code: wgerr.CodeOutcomeUnknown,
						Message: fmt.Sprintf("the request with Idempotency-Key %q took effect but its answer was lost (the server handling it stopped or failed before answering); it will not run again: look up its outcome, or send a new request with a new key", key),
						Details: map[string]any{"effect_at": rec.EffectAt.UTC().Format(time.RFC3339Nano)}}
				}
				if !rec.OwnerAlive {
					continue // its owner died just now: take it over
				}
				c.Response().Header().Set("Retry-After", "1")
				return wgerr.New(wgerr.CodeInProgress, "a request with Idempotency-Key %q is still being processed; retry in a moment", key)
			}
			c.Response().Header().Set(ReplayedHeader, "true")
			ct := "application/json"
			if rec.ContentType != nil {
				ct = *rec.ContentType
			}
			if *rec.Status == http.StatusNoContent || len(rec.Response) == 0 {
				return c.NoContent(int(*rec.Status))
			}
			return c.Blob(int(*rec.Status), ct, rec.Response)
		}
		c.Response().Header().Set("Retry-After", "1")
		return wgerr.New(wgerr.CodeInProgress, "Idempotency-Key %q is contended; retry in a moment", key)
	}
}

// idemRun is one request that owns its Idempotency-Key record.
type idemRun struct {
	a       *API
	kind    effectKind
	tokenID uuid.UUID
	key     string
	hash    []byte
	owner   uuid.UUID
	// effect: a write transaction of the request marked the record.
	effect atomic.Bool
}

// run runs the handler as the record's owner: the lock is renewed while it
// runs, its write transactions are fenced on the record (beforeCommit), its
// error is answered in place so the answer can be captured, and the answer
// is stored or forgotten.
func (r *idemRun) run(c echo.Context, next echo.HandlerFunc) error {
	a := r.a
	rec := &recorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	// Handlers may replace the request's context with a shorter one (and
	// cancel it when they return): judge by the caller's.
	callerCtx := c.Request().Context()
	stopRenew := r.renew(callerCtx)
	finished := false
	defer func() {
		stopRenew()
		if !finished { // a panic: forget the key so a retry runs again
			r.forget(callerCtx)
		}
	}()
	c.SetRequest(c.Request().WithContext(db.WithBeforeCommit(callerCtx, r.beforeCommit)))
	if err := next(c); err != nil {
		writeProblem(c, a.log, err)
	}
	finished = true
	stopRenew()
	status := c.Response().Status
	worthKeeping := status < 500 && status != http.StatusTooManyRequests && !rec.overflow
	if !worthKeeping || (callerCtx.Err() != nil && !r.effect.Load()) {
		r.forget(callerCtx)
		return nil
	}
	ct := c.Response().Header().Get(echo.HeaderContentType)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), 5*time.Second)
	defer cancel()
	st := int32(status)
	err := a.idem.q.FinishIdempotentRequest(ctx, a.idem.pool, dbq.FinishIdempotentRequestParams{
		TokenID: r.tokenID, Key: r.key, Owner: &r.owner,
		Status: &st, ContentType: &ct, Response: rec.buf.Bytes(), Now: a.idem.clock.Now(),
	})
	if err != nil {
		a.log.ErrorContext(ctx, "storing an idempotent answer", "key", r.key, "err", err)
	}
	return nil
}

// beforeCommit fences a write transaction of the request on its record:
// the record is marked as having taken effect in the same transaction,
// which fails (and rolls the writes back) when another request took the
// record over. Transactions that made no effect (wrote nothing; for a
// claim, granted no lease) pass unmarked.
func (r *idemRun) beforeCommit(ctx context.Context, tx pgx.Tx) error {
	var m dbq.MarkIdempotentEffectRow
	var err error
	if r.kind == effectLease {
		var c dbq.MarkIdempotentClaimRow
		c, err = r.a.idem.q.MarkIdempotentClaim(ctx, tx, dbq.MarkIdempotentClaimParams{
			TokenID: &r.tokenID, Key: r.key, Owner: &r.owner,
		})
		m = dbq.MarkIdempotentEffectRow(c)
	} else {
		m, err = r.a.idem.q.MarkIdempotentEffect(ctx, tx, dbq.MarkIdempotentEffectParams{
			TokenID: r.tokenID, Key: r.key, Owner: &r.owner,
		})
	}
	if err != nil {
		return err
	}
	if m.Wrote && !m.Marked {
		return wgerr.New(wgerr.CodeConflict, "the request with Idempotency-Key %q was taken over by a retry; nothing was changed", r.key)
	}
	if m.Marked {
		r.effect.Store(true)
	}
	return nil
}

// renew keeps the record locked until the returned stop is called.
func (r *idemRun) renew(callerCtx context.Context) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(idemRenew)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), idemRenew)
			_, err := r.a.idem.q.RenewIdempotentRequest(ctx, r.a.idem.pool, dbq.RenewIdempotentRequestParams{
				TokenID: r.tokenID, Key: r.key, Owner: &r.owner, LockSeconds: idemLock.Seconds(), Now: r.a.idem.clock.Now(),
			})
			cancel()
			if err != nil {
				r.a.log.WarnContext(ctx, "renewing an idempotency key", "key", r.key, "err", err)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); <-exited })
	}
}

// forget deletes the record of a request that took no effect, so a retry
// runs it again; a record whose request took effect is unlocked instead,
// so a retry learns at once that the outcome is unknown.
func (r *idemRun) forget(callerCtx context.Context) {
	a := r.a
	ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), 5*time.Second)
	defer cancel()
	n, err := a.idem.q.AbandonIdempotentRequest(ctx, a.idem.pool, dbq.AbandonIdempotentRequestParams{
		TokenID: r.tokenID, Key: r.key, Owner: &r.owner,
	})
	if err == nil && n == 0 {
		err = a.idem.q.ReleaseIdempotentRequest(ctx, a.idem.pool, dbq.ReleaseIdempotentRequestParams{
			TokenID: r.tokenID, Key: r.key, Owner: &r.owner, Now: a.idem.clock.Now(),
		})
	}
	if err != nil {
		a.log.ErrorContext(ctx, "forgetting an idempotency key", "key", r.key, "err", err)
	}
}

// recorder keeps a copy of the answer's body (up to the body limit).
type recorder struct {
	http.ResponseWriter
	buf      bytes.Buffer
	overflow bool
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.overflow {
		if r.buf.Len()+len(p) > 4*maxBodyBytes {
			r.overflow = true
			r.buf.Reset()
		} else {
			r.buf.Write(p)
		}
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// KeyJanitor deletes expired idempotency records periodically. It is a
// background service: Start it once, Stop it on shutdown.
type KeyJanitor struct {
	store    *idempotencyStore
	interval time.Duration
	log      interface {
		Error(msg string, args ...any)
	}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool
}

// Janitor returns the service that removes expired idempotency keys every
// interval.
func (a *API) Janitor(interval time.Duration) *KeyJanitor {
	return &KeyJanitor{store: &a.idem, interval: interval, log: a.log, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs the janitor until Stop or ctx ends.
func (j *KeyJanitor) Start(ctx context.Context) {
	if !j.started.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(j.done)
		t := time.NewTicker(j.interval)
		defer t.Stop()
		for {
			j.RunOnce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-j.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// RunOnce deletes the expired records now and returns how many.
func (j *KeyJanitor) RunOnce(ctx context.Context) int64 {
	n, err := j.store.q.DeleteExpiredIdempotencyKeys(ctx, j.store.pool, j.store.clock.Now())
	if err != nil && ctx.Err() == nil {
		j.log.Error("deleting expired idempotency keys", "err", err)
	}
	return n
}

// Stop ends the janitor and waits for it.
func (j *KeyJanitor) Stop() {
	j.once.Do(func() { close(j.stop) })
	if j.started.Load() {
		<-j.done
	}
}
