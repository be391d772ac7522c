package fence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// The HTTP conventions of a fenced request.
const (
	// HeaderFence carries the lease's fence token (Claims, signed).
	HeaderFence = "Workgraph-Fence"
	// HeaderOperation carries the stable operation id (optional; without
	// it a repeat applies again).
	HeaderOperation = "Workgraph-Operation"
	// HeaderReplayed is "true" on the answer to an identical replay: the
	// stored answer of the first application, nothing applied again.
	HeaderReplayed = "Workgraph-Replayed"
)

// The variables `workgraph work` hands to the command it runs.
const (
	// EnvToken holds the lease's fence token (send it as HeaderFence).
	EnvToken = "WORKGRAPH_FENCE"
	// EnvOperationPrefix is "<item id>/": the same for every
	// attempt at the item, so an operation id built on it
	// (prefix + "deploy") is stable across workers and retries.
	EnvOperationPrefix = "WORKGRAPH_OPERATION_PREFIX"
	// EnvKeysURL is the URL of the server's keys document (KeysPath).
	EnvKeysURL = "WORKGRAPH_FENCE_KEYS_URL"
)

// Problem codes the middleware answers with (application/problem+json).
const (
	CodeFenceRequired     = "fence_required"      // 401: no HeaderFence
	CodeFenceInvalid      = "fence_invalid"       // 401: malformed or forged token
	CodeFenceWrongProject = "fence_wrong_project" // 403: token of another project
	CodeFenceOutOfScope   = "fence_out_of_scope"  // 403: a write outside the lease's scopes
	CodeFenceStale        = "fence_stale"         // 409: a newer lease has written
	CodeOperationConflict = "operation_conflict"  // 409: same operation, changed payload
	CodeInvalidOperation  = "invalid_operation"   // 400: operation id too long or not UTF-8
	CodeInvalidBody       = "invalid_body"        // 400: the body could not be read
	CodeBodyTooLarge      = "body_too_large"      // 413
	CodeUnavailable       = "unavailable"         // 503: the destination's database, or the server's keys
)

// DefaultMaxBody bounds a fenced request's body when Middleware.MaxBody is
// 0.
const DefaultMaxBody = 1 << 20

// Beginner starts the destination's transaction (a *pgxpool.Pool or a
// *pgx.Conn).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Middleware fences a Go HTTP destination: it verifies the request's fence
// token, begins the destination's transaction, runs the gate in it and
// hands the transaction to the wrapped handler (TxFrom), which applies its
// effect in it. A 2xx answer commits the effect, the raised mark and, with
// an operation id, the receipt (the answer itself is the stored result); any
// other answer, or a panic, rolls all of it back.
type Middleware struct {
	DB   Beginner
	Gate *Gate
	// Keys are the trusted public keys (ParseKeys of the server's keys
	// document), a fixed list; KeySet, when set, is used instead.
	Keys []ed25519.PublicKey
	// KeySet, when set, follows the server's keys document (and so its key
	// rotations) instead of the fixed Keys.
	KeySet *KeySet
	// Project is the id of the workgraph project the destination serves;
	// a token of another project is refused. Empty: any project.
	Project string
	// MaxBody bounds the request body (0: DefaultMaxBody).
	MaxBody int64
	// Target, when set, names what a request writes as a write-scope
	// target ("resource" or "resource:literal/path", see Claims.Covers);
	// a request whose target the token's scopes do not cover is refused
	// (403 fence_out_of_scope) before the gate, changing nothing. A
	// token of a lease that holds no scope covers nothing, so set it only
	// where the items whose workers write here declare touches. "" means
	// the request writes nothing scoped (not checked). Nil: no check.
	Target func(r *http.Request) string
	// Log receives failures of the destination's database (nil: discarded).
	Log *slog.Logger
}

type ctxKey int

const (
	txKey ctxKey = iota
	claimsKey
)

// TxFrom returns the destination transaction the middleware runs the
// request in (nil outside it). The handler must neither commit nor roll it
// back.
func TxFrom(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(txKey).(pgx.Tx)
	return tx
}

// ClaimsFrom returns the verified claims of the request's fence token.
func ClaimsFrom(ctx context.Context) (Claims, bool) {
	c, ok := ctx.Value(claimsKey).(Claims)
	return c, ok
}

// storedAnswer is the receipt's result: the first answer, replayed as is.
type storedAnswer struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
}

// Wrap returns next behind the fence.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.Header.Get(HeaderFence)
		if raw == "" {
			problem(w, http.StatusUnauthorized, CodeFenceRequired, "this destination needs the lease's fence token in the "+HeaderFence+" header")
			return
		}
		claims, err := m.verify(r.Context(), raw)
		if errors.Is(err, ErrKeysUnavailable) {
			if m.Log != nil {
				m.Log.Error("fence: keys document", "err", err)
			}
			problem(w, http.StatusServiceUnavailable, CodeUnavailable, "the workgraph server's keys could not be fetched to check the token; nothing was applied, retry later")
			return
		}
		if err != nil {
			problem(w, http.StatusUnauthorized, CodeFenceInvalid, err.Error())
			return
		}
		if m.Project != "" && claims.Project != m.Project {
			problem(w, http.StatusForbidden, CodeFenceWrongProject,
				fmt.Sprintf("the token was signed for project %s; this destination serves project %s", claims.Project, m.Project))
			return
		}
		if m.Target != nil {
			if target := m.Target(r); target != "" {
				if err := claims.CheckScope(target); err != nil {
					problem(w, http.StatusForbidden, CodeFenceOutOfScope, err.Error())
					return
				}
			}
		}
		op := r.Header.Get(HeaderOperation)
		if len(op) > MaxOperationLen {
			problem(w, http.StatusBadRequest, CodeInvalidOperation, fmt.Sprintf("%s is longer than %d bytes", HeaderOperation, MaxOperationLen))
			return
		}
		if !storable(op) {
			problem(w, http.StatusBadRequest, CodeInvalidOperation, HeaderOperation+" is not UTF-8 text")
			return
		}
		limit := m.MaxBody
		if limit <= 0 {
			limit = DefaultMaxBody
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			problem(w, http.StatusBadRequest, CodeInvalidBody, "reading the body: "+err.Error())
			return
		}
		if int64(len(body)) > limit {
			problem(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The payload an operation id is bound to: what is done, to what.
		payload := append([]byte(r.Method+" "+r.URL.RequestURI()+"\n"), body...)
		m.serve(w, r, next, claims, claims.Attempt(op, payload))
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, claims Claims, at Attempt) {
	ctx := r.Context()
	tx, err := m.DB.Begin(ctx)
	if err != nil {
		m.unavailable(w, err)
		return
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	adm, err := m.Gate.Admit(ctx, tx, at)
	var stale *StaleTokenError
	switch {
	case errors.As(err, &stale):
		problem(w, http.StatusConflict, CodeFenceStale, fmt.Sprintf(
			"lease %s (epoch %d) is stale here: epoch %d of item %s has already written; stop and do not retry",
			claims.Lease, claims.Epoch, stale.HighWater, claims.Item))
		return
	case errors.Is(err, ErrOperationConflict):
		problem(w, http.StatusConflict, CodeOperationConflict, fmt.Sprintf(
			"operation %q was already applied with a different payload; nothing was changed", at.Operation))
		return
	case errors.Is(err, ErrInvalidAttempt):
		problem(w, http.StatusBadRequest, CodeInvalidOperation, err.Error())
		return
	case err != nil:
		m.unavailable(w, err)
		return
	}
	if adm.Replayed {
		var ans storedAnswer
		if err := json.Unmarshal(adm.Result, &ans); err != nil {
			m.unavailable(w, fmt.Errorf("fence: stored answer of %q: %w", at.Operation, err))
			return
		}
		// Commit: a replay under a larger token raises the mark too.
		if err := tx.Commit(ctx); err != nil {
			m.unavailable(w, err)
			return
		}
		w.Header().Set(HeaderReplayed, "true")
		writeAnswer(w, ans)
		return
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	ctx = context.WithValue(context.WithValue(ctx, txKey, tx), claimsKey, claims)
	next.ServeHTTP(rec, r.WithContext(ctx))
	ans := storedAnswer{Status: rec.status, ContentType: rec.header.Get("Content-Type"), Body: rec.body.Bytes()}
	if rec.status < 200 || rec.status > 299 {
		// Not applied: the effect, the mark and no receipt roll back.
		tx.Rollback(context.WithoutCancel(ctx))
		copyHeader(w.Header(), rec.header)
		writeAnswer(w, ans)
		return
	}
	result, err := json.Marshal(ans)
	if err == nil {
		err = m.Gate.Record(ctx, tx, at, result)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		m.unavailable(w, err)
		return
	}
	copyHeader(w.Header(), rec.header)
	writeAnswer(w, ans)
}

// verify checks a token with the KeySet when there is one, else with the
// fixed Keys.
func (m *Middleware) verify(ctx context.Context, token string) (Claims, error) {
	if m.KeySet != nil {
		return m.KeySet.Verify(ctx, token)
	}
	return Verify(m.Keys, token)
}

func (m *Middleware) unavailable(w http.ResponseWriter, err error) {
	if m.Log != nil {
		m.Log.Error("fence: destination database", "err", err)
	}
	problem(w, http.StatusServiceUnavailable, CodeUnavailable, "the destination's database did not answer; nothing was applied, retry later")
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

func writeAnswer(w http.ResponseWriter, ans storedAnswer) {
	if ans.ContentType != "" {
		w.Header().Set("Content-Type", ans.ContentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(ans.Body)))
	w.WriteHeader(ans.Status)
	w.Write(ans.Body)
}

// problem answers an RFC 9457 problem with a machine-readable code.
func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type": "about:blank", "title": http.StatusText(status), "status": status, "code": code, "detail": detail,
	})
}

// recorder holds the wrapped handler's answer until the transaction has
// committed, so a client never sees a success that rolled back.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
