// Package counter is a small example destination: a service that agents
// change (here, named counters they add units to), fenced with package
// fence so that a worker whose workgraph lease was taken over cannot
// change it after the newer worker did, and a retried operation is not
// applied twice.
//
// The API:
//
//	POST /counters/{name}/add   {"units": n}  fenced: Workgraph-Fence (required),
//	                                          Workgraph-Operation (optional);
//	                                          with RequireScopes, only inside
//	                                          the lease's write scopes
//	GET  /counters/{name}                     {"name", "units"}
//	POST /unfenced/counters/{name}/add        the same effect without any fence:
//	                                          the baseline the fenced route is
//	                                          compared with (seed 002's finish-only)
//
// It keeps its state in its own PostgreSQL database (not workgraph's): the
// table counters and the gate's tables in schema "fence".
package counter

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/fence"
)

// Schema is where the gate's tables live in the destination database.
const Schema = "fence"

// MaxUnits bounds one addition.
const MaxUnits = 1000

// Migrate creates the counters table and the gate's tables.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS counters (
		name  text PRIMARY KEY,
		units bigint NOT NULL DEFAULT 0
	)`); err != nil {
		return err
	}
	return fence.Migrate(ctx, pool, Schema)
}

// Service is the counter destination.
type Service struct {
	pool *pgxpool.Pool
	gate *fence.Gate
	mw   *fence.Middleware
	// AfterEffect, when set, runs in the fenced transaction right after
	// the addition and before the receipt and commit; an error fails the
	// request (500) and rolls everything back. Tests use it to fail a
	// transaction that has already raised the mark and added.
	AfterEffect func(ctx context.Context, tx pgx.Tx) error
}

// New returns the service on pool, trusting tokens signed by keys for
// project (a workgraph project id; "" any project).
func New(pool *pgxpool.Pool, keys []ed25519.PublicKey, project string, log *slog.Logger) (*Service, error) {
	gate, err := fence.NewGate(Schema)
	if err != nil {
		return nil, err
	}
	s := &Service{pool: pool, gate: gate}
	s.mw = &fence.Middleware{DB: pool, Gate: gate, Keys: keys, Project: project, Log: log}
	return s, nil
}

// RequireScopes makes the fenced route refuse (403 fence_out_of_scope) an
// addition to a counter outside the write scopes of the token's lease:
// counter "n" is the target "counter:n", so an item whose workers add to
// it declares touches ["counter:n"] (or "counter" for every counter). A
// lease whose item declares no touches may then add to none. Call it
// before serving.
func (s *Service) RequireScopes() {
	s.mw.Target = func(r *http.Request) string { return "counter:" + r.PathValue("name") }
}

// FollowKeys makes the fenced route trust the keys ks follows (the
// server's keys document, so its key rotations) instead of the fixed keys
// New was given. Call it before serving.
func (s *Service) FollowKeys(ks *fence.KeySet) { s.mw.KeySet = ks }

// Pool is the service's database.
func (s *Service) Pool() *pgxpool.Pool { return s.pool }

// Gate is the service's gate (to read its marks).
func (s *Service) Gate() *fence.Gate { return s.gate }

// Handler serves the API.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /counters/{name}/add", s.mw.Wrap(http.HandlerFunc(s.addFenced)))
	mux.HandleFunc("POST /unfenced/counters/{name}/add", s.addUnfenced)
	mux.HandleFunc("GET /counters/{name}", s.get)
	return mux
}

type addRequest struct {
	Units int64 `json:"units"`
}

// Counter is a counter's state.
type Counter struct {
	Name  string `json:"name"`
	Units int64  `json:"units"`
}

func decodeAdd(r *http.Request) (int64, error) {
	var req addRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return 0, fmt.Errorf("the body must be {\"units\": n}: %v", err)
	}
	if req.Units < 1 || req.Units > MaxUnits {
		return 0, fmt.Errorf("units must be between 1 and %d, got %d", MaxUnits, req.Units)
	}
	return req.Units, nil
}

const addSQL = `INSERT INTO counters (name, units) VALUES ($1, $2)
	ON CONFLICT (name) DO UPDATE SET units = counters.units + EXCLUDED.units
	RETURNING units`

func (s *Service) addFenced(w http.ResponseWriter, r *http.Request) {
	units, err := decodeAdd(r)
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid_body", err.Error())
		return
	}
	ctx := r.Context()
	tx := fence.TxFrom(ctx)
	c := Counter{Name: r.PathValue("name")}
	if err := tx.QueryRow(ctx, addSQL, c.Name, units).Scan(&c.Units); err != nil {
		problem(w, http.StatusServiceUnavailable, "unavailable", "the counter database did not answer")
		return
	}
	if s.AfterEffect != nil {
		if err := s.AfterEffect(ctx, tx); err != nil {
			problem(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Service) addUnfenced(w http.ResponseWriter, r *http.Request) {
	units, err := decodeAdd(r)
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid_body", err.Error())
		return
	}
	c := Counter{Name: r.PathValue("name")}
	if err := s.pool.QueryRow(r.Context(), addSQL, c.Name, units).Scan(&c.Units); err != nil {
		problem(w, http.StatusServiceUnavailable, "unavailable", "the counter database did not answer")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) {
	c, err := s.Counter(r.Context(), r.PathValue("name"))
	if err != nil {
		problem(w, http.StatusServiceUnavailable, "unavailable", "the counter database did not answer")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// Counter reads a counter's committed units (0 when never added to).
func (s *Service) Counter(ctx context.Context, name string) (Counter, error) {
	c := Counter{Name: name}
	err := s.pool.QueryRow(ctx, `SELECT units FROM counters WHERE name = $1`, name).Scan(&c.Units)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	return c, err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "code": code, "detail": detail})
}
