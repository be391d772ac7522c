package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/idempotency"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// IdempotencyHeader is the request header naming a retry-safe POST;
// ReplayedHeader marks an answer replayed from the store.
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
	// IdempotencyTTL is how long a key and its answer are kept.
	IdempotencyTTL = idempotency.TTL
)

// isWrite reports whether method may change something: POST, PUT, PATCH
// and DELETE, the methods an Idempotency-Key makes safe to retry.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// idempotent makes a write (isWrite) carrying an Idempotency-Key run at most once per
// (token, key): a retry with the same method, path and body gets the stored
// answer (same status and body, header Idempotent-Replayed: true); the same
// key with another request is refused as 409 conflict. While the first
// request runs, a retry is answered 409 request_in_progress with
// Retry-After; when its owner died (no lock renewal for idempotency.LockFor) before
// its effect committed, the retry runs the request itself. The records
// are package idempotency's. When the effect
// committed but the answer was lost, a retry is answered 409
// outcome_unknown and nothing runs again. Answers that are not worth
// replaying (5xx, 429, a request that never finished) of requests that took
// no effect are forgotten so that a retry runs again.
func (a *API) idempotent(kind effectKind) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return a.idempotentAs(kind, next)
	}
}

// effectKind says which transactions of a request count as its effect:
// idempotency.EffectWrites (any that wrote) or idempotency.EffectLease (one
// that granted a lease to the caller's token, a claim, whose retry with a
// lost answer is answered from the lease: recoverClaim).
type effectKind = idempotency.Effect

const (
	effectWrites = idempotency.EffectWrites
	effectLease  = idempotency.EffectLease
)

func (a *API) idempotentAs(kind effectKind, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		key := req.Header.Get(IdempotencyHeader)
		_, sent := req.Header[IdempotencyHeader]
		if !isWrite(req.Method) || !sent {
			return next(c)
		}
		// A key sent empty or blank (net/http trims the value, so " " is
		// "") is refused, not read as no key: the client meant its write
		// to be retry-safe.
		if len(key) > 255 || strings.TrimSpace(key) == "" {
			return wgerr.InvalidField(IdempotencyHeader, "must be 1 to 255 visible characters")
		}
		if err := input.Line(IdempotencyHeader, key); err != nil {
			return err
		}
		body, err := readBody(c)
		if err != nil {
			return err
		}
		h := sha256.New()
		h.Write([]byte(req.Method + "\n" + req.URL.Path + "?" + req.URL.RawQuery + "\n"))
		h.Write(body)
		r := &idemRun{a: a, kind: kind, req: idempotency.Request{
			TokenID: principal(c).TokenID, Key: key, Hash: h.Sum(nil), Owner: uuid.New(),
		}}

		if kind == effectLease {
			// A claim's record rides with its first statement.
			taken, err := r.runCarried(c, next, body)
			if !taken {
				return err
			}
			// Another request holds the record: nothing ran; answer from
			// the record as below.
			req = c.Request()
		}
		// Bounded retries: a record may expire between the insert and the read.
		for range 3 {
			began, err := a.idem.Begin(req.Context(), r.req)
			if err != nil {
				return err
			}
			if began {
				return r.run(c, next)
			}
			rec, err := a.idem.Get(req.Context(), r.req.TokenID, key)
			if errors.Is(err, wgerr.NotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if !bytes.Equal(rec.Hash, r.req.Hash) {
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
			if rec.ETag != nil {
				c.Response().Header().Set("ETag", *rec.ETag)
			}
			ct := "application/json"
			if rec.ContentType != nil {
				ct = *rec.ContentType
			}
			if *rec.Status == http.StatusNoContent || len(rec.Response) == 0 {
				return c.NoContent(*rec.Status)
			}
			return c.Blob(*rec.Status, ct, rec.Response)
		}
		c.Response().Header().Set("Retry-After", "1")
		return wgerr.New(wgerr.CodeInProgress, "Idempotency-Key %q is contended; retry in a moment", key)
	}
}

// idemRun is one request that owns its Idempotency-Key record.
type idemRun struct {
	a    *API
	kind effectKind
	req  idempotency.Request
	// effect: a write transaction of the request marked the record.
	effect atomic.Bool
}

// run runs the handler as the record's owner: the lock is renewed while it
// runs, its write transactions are fenced on the record (Store.Fence), its
// error is answered in place so the answer can be captured, and the answer
// is stored or forgotten.
func (r *idemRun) run(c echo.Context, next echo.HandlerFunc) error {
	a := r.a
	rec := newRecorder(c)
	c.Response().Writer = rec
	// Handlers may replace the request's context with a shorter one (and
	// cancel it when they return): judge by the caller's.
	callerCtx := c.Request().Context()
	holder := a.idem.Hold(r.req, a.log)
	holder.Start(callerCtx)
	finished := false
	defer func() {
		holder.Stop()
		if !finished { // a panic: forget the key so a retry runs again
			r.forget(callerCtx)
		}
	}()
	c.SetRequest(c.Request().WithContext(a.idem.Fence(callerCtx, r.req, r.kind, func() { r.effect.Store(true) })))
	if err := next(c); err != nil {
		writeProblem(c, a.log, a.unknown(err))
	}
	finished = true
	holder.Stop()
	r.store(c, rec, callerCtx)
	return nil
}

// runCarried runs a claim as the owner of its record without a round trip
// of its own to begin it: idempotency.Store.BeginCarried's statement rides
// at the head of the claim's first statement (and the mark of its effect
// in that statement's batch, see Store.Fence), so a claim with an
// Idempotency-Key costs the database the round trip of a claim without
// one, and its answer's. When another request holds the record, that
// statement fails and nothing of it commits: taken is true, the request is
// as it came (its body to read again), and the caller answers from the
// record. The record is judged before any answer leaves: a handler that
// sent no statement has it judged alone (Store.Judge) first.
func (r *idemRun) runCarried(c echo.Context, next echo.HandlerFunc, body []byte) (taken bool, err error) {
	a := r.a
	orig := c.Request()
	carried, err := a.idem.BeginCarried(orig.Context(), r.req)
	if err != nil {
		return false, err
	}
	c.SetRequest(orig.WithContext(carried))
	rec := newRecorder(c)
	guard := &checkedWriter{ResponseWriter: rec, confirm: func() error { return a.idem.Judge(carried) }}
	c.Response().Writer = guard
	callerCtx := carried
	holder := a.idem.Hold(r.req, a.log)
	holder.Start(orig.Context())
	finished := false
	defer func() {
		holder.Stop()
		if !finished { // a panic: forget the key so a retry runs again
			r.forget(orig.Context())
		}
	}()
	c.SetRequest(c.Request().WithContext(a.idem.Fence(callerCtx, r.req, r.kind, func() { r.effect.Store(true) })))
	herr := next(c)
	finished = true
	holder.Stop()
	verdict := guard.verdict
	if !guard.judged {
		verdict = a.idem.Judge(carried)
	}
	c.Response().Writer = rec.ResponseWriter
	if verdict != nil {
		if guard.judged && guard.verdict != nil {
			res := c.Response()
			res.Committed, res.Status, res.Size = false, 0, 0
			res.Header().Del(echo.HeaderContentType)
			res.Header().Del(echo.HeaderContentLength)
		}
		if idempotency.Taken(verdict) {
			orig.Body = io.NopCloser(bytes.NewReader(body))
			c.SetRequest(orig)
			return true, nil
		}
		// Refused otherwise (the token), or not judged (the database):
		// no record was written.
		return false, verdict
	}
	c.Response().Writer = rec
	if herr != nil {
		writeProblem(c, a.log, a.unknown(herr))
	}
	c.Response().Writer = rec.ResponseWriter
	r.store(c, rec, orig.Context())
	return false, nil
}

// store keeps the answer the recorder captured, or forgets the record of
// an answer not worth keeping.
func (r *idemRun) store(c echo.Context, rec *recorder, callerCtx context.Context) {
	a := r.a
	status := c.Response().Status
	worthKeeping := status < 500 && status != http.StatusTooManyRequests
	if !worthKeeping || (callerCtx.Err() != nil && !r.effect.Load()) {
		r.forget(callerCtx)
		return
	}
	ct := c.Response().Header().Get(echo.HeaderContentType)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), storeTimeout(rec.buf.Len()))
	defer cancel()
	if err := a.idem.Finish(ctx, r.req, status, ct, c.Response().Header().Get("ETag"), rec.buf.Bytes()); err != nil {
		a.log.ErrorContext(ctx, "storing an idempotent answer", "key", r.req.Key, "err", err)
	}
}

// forget deletes the record of a request that took no effect, so a retry
// runs it again; a record whose request took effect is unlocked instead,
// so a retry learns at once that the outcome is unknown.
func (r *idemRun) forget(callerCtx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), 5*time.Second)
	defer cancel()
	if err := r.a.idem.Forget(ctx, r.req); err != nil {
		r.a.log.ErrorContext(ctx, "forgetting an idempotency key", "key", r.req.Key, "err", err)
	}
}

// recorder keeps a copy of the answer's body, whole: an answer is stored
// whatever its size (a plan import's or a batch claim's can be tens of
// MiB), so a retry gets it and never outcome_unknown for want of room.
// The copy costs no more than the answer the handler already held in
// memory to write it (c.JSON encodes the whole answer before writing).
type recorder struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func newRecorder(c echo.Context) *recorder {
	return &recorder{ResponseWriter: c.Response().Writer}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.buf.Write(p)
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// storeTimeout is how long storing an answer of n bytes may take: 5 s,
// and 1 s more per MiB beyond the first 4 (a plan import's answer can be
// tens of MiB).
func storeTimeout(n int) time.Duration {
	return 5*time.Second + time.Duration(max(0, n-4<<20)>>20)*time.Second
}
