package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

type idempotencyStore struct {
	pool  *pgxpool.Pool
	clock clock.Clock
	q     *dbq.Queries
}

// idempotent makes a POST carrying an Idempotency-Key run at most once per
// (token, key): a retry with the same method, path and body gets the stored
// answer (same status and body, header Idempotent-Replayed: true); the same
// key with another request, or while the first is still running, is refused
// as 409 conflict. Answers that are not worth replaying (5xx, 429, a request
// that never finished) are forgotten so that a retry runs again.
func (a *API) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
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
		hash := h.Sum(nil)
		tokenID := principal(c).TokenID

		// Bounded retries: a record may expire between the insert and the read.
		for range 3 {
			began, err := a.idem.q.BeginIdempotentRequest(req.Context(), a.idem.pool, dbq.BeginIdempotentRequestParams{
				TokenID: tokenID, Key: key, RequestHash: hash, Now: a.idem.clock.Now(),
			})
			if err != nil {
				return db.Translate(err)
			}
			if began == 1 {
				return a.runRecorded(c, next, key, hash)
			}
			rec, err := a.idem.q.GetIdempotentRequest(req.Context(), a.idem.pool, dbq.GetIdempotentRequestParams{TokenID: tokenID, Key: key})
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return db.Translate(err)
			}
			if !bytes.Equal(rec.RequestHash, hash) {
				return wgerr.New(wgerr.CodeConflict, "Idempotency-Key %q was already used with a different request (method, path or body); use a new key for a new request", key)
			}
			if rec.Status == nil {
				return wgerr.New(wgerr.CodeConflict, "a request with Idempotency-Key %q is still being processed; retry later", key)
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
		return wgerr.New(wgerr.CodeConflict, "Idempotency-Key %q is contended; retry", key)
	}
}

// runRecorded runs the handler, answers its error in place so the answer
// can be captured, and stores or forgets the answer.
func (a *API) runRecorded(c echo.Context, next echo.HandlerFunc, key string, hash []byte) error {
	rec := &recorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	finished := false
	defer func() {
		if !finished { // a panic: forget the key so a retry runs again
			a.forget(c, key, hash)
		}
	}()
	// Handlers may replace the request's context with a shorter one (and
	// cancel it when they return): judge by the caller's.
	callerCtx := c.Request().Context()
	if err := next(c); err != nil {
		writeProblem(c, a.log, err)
	}
	finished = true
	status := c.Response().Status
	if status >= 500 || status == http.StatusTooManyRequests || rec.overflow || callerCtx.Err() != nil {
		a.forget(c, key, hash)
		return nil
	}
	ct := c.Response().Header().Get(echo.HeaderContentType)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), 5*time.Second)
	defer cancel()
	st := int32(status)
	err := a.idem.q.FinishIdempotentRequest(ctx, a.idem.pool, dbq.FinishIdempotentRequestParams{
		TokenID: principal(c).TokenID, Key: key, RequestHash: hash,
		Status: &st, ContentType: &ct, Response: rec.buf.Bytes(), Now: a.idem.clock.Now(),
	})
	if err != nil {
		a.log.ErrorContext(ctx, "storing an idempotent answer", "key", key, "err", err)
	}
	return nil
}

func (a *API) forget(c echo.Context, key string, hash []byte) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 5*time.Second)
	defer cancel()
	err := a.idem.q.AbandonIdempotentRequest(ctx, a.idem.pool, dbq.AbandonIdempotentRequestParams{
		TokenID: principal(c).TokenID, Key: key, RequestHash: hash,
	})
	if err != nil {
		a.log.ErrorContext(ctx, "forgetting an idempotency key", "key", key, "err", err)
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
