package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/api/openapi"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// adminSecret is the bootstrap token every test server starts with.
const adminSecret = "acceptance-bootstrap-secret-0123456789"

// obj is a decoded JSON object; numbers stay json.Number so that tests can
// tell integers from fractions.
type obj = map[string]any

// env is one running server on its own database.
type env struct {
	t     *testing.T
	url   string
	dbURL string
	db    *pgxpool.Pool
	admin string
	http  *http.Client
	logs  *syncBuffer
}

// syncBuffer collects the server's log output.
type syncBuffer = servertest.SyncBuffer

// setup boots a server with the bootstrap token on a fresh database, its
// configuration changed by tune.
func setup(t *testing.T, tune ...func(*server.Config)) *env {
	t.Helper()
	return boot(t, dbtest.URL(t), adminSecret, tune...)
}

// boot starts a server on dbURL (bootstrap may be empty), its
// configuration changed by tune, and stops it when the test ends.
func boot(t *testing.T, dbURL, bootstrap string, tune ...func(*server.Config)) *env {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := server.Config{
		DatabaseURL:    dbURL,
		Addr:           "127.0.0.1:0",
		BootstrapToken: bootstrap,
		Logger:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(pool.Close)
	return &env{
		t: t, url: srv.URL(), dbURL: dbURL, db: pool, admin: bootstrap, logs: logs,
		http: &http.Client{Timeout: 90 * time.Second},
	}
}

// resp is one HTTP answer.
type resp struct {
	status int
	header http.Header
	raw    []byte
}

// req describes a request: body is JSON-encoded unless it is a string or
// []byte (sent as is).
type req struct {
	method string
	path   string
	token  string
	body   any
	header map[string]string
}

func (e *env) send(r req) resp {
	e.t.Helper()
	var rd io.Reader
	var sent []byte
	switch b := r.body.(type) {
	case nil:
	case string:
		sent = []byte(b)
	case []byte:
		sent = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("encode body: %v", err)
		}
		sent = data
	}
	if r.body != nil {
		rd = bytes.NewReader(sent)
	}
	hr, err := http.NewRequest(r.method, e.url+r.path, rd)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := e.http.Do(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	if strings.HasPrefix(r.path, "/v1/") {
		if err := contract().CheckResponse(r.method, r.path, res.StatusCode, res.Header, raw); err != nil {
			e.t.Errorf("answer breaks openapi.json: %v", err)
		}
		if res.StatusCode < 300 {
			if err := contract().CheckRequest(r.method, r.path, hr.Header, sent); err != nil {
				e.t.Errorf("the server accepted a request openapi.json does not allow: %v", err)
			}
		}
	}
	return resp{status: res.StatusCode, header: res.Header, raw: raw}
}

// contract is the served OpenAPI document, against which send checks every
// answer under /v1/ (status, content type and body), and the body of every
// request the server accepted; the routes outside /v1/ (health checks, the
// web UI) are not part of it.
var contract = sync.OnceValue(func() *openapi.Document {
	d, err := openapi.Load(api.OpenAPIDocument())
	if err != nil {
		panic(err)
	}
	return d
})

func (e *env) get(token, path string) resp {
	e.t.Helper()
	return e.send(req{method: http.MethodGet, path: path, token: token})
}

func (e *env) post(token, path string, body any) resp {
	e.t.Helper()
	return e.send(req{method: http.MethodPost, path: path, token: token, body: body})
}

func (e *env) patch(token, path string, body any) resp {
	e.t.Helper()
	return e.send(req{method: http.MethodPatch, path: path, token: token, body: body})
}

func (e *env) del(token, path string) resp {
	e.t.Helper()
	return e.send(req{method: http.MethodDelete, path: path, token: token})
}

// json decodes the answer as one JSON object.
func (r resp) json(t *testing.T) obj {
	t.Helper()
	var v obj
	dec := json.NewDecoder(bytes.NewReader(r.raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("answer (%d) is not a JSON object: %v: %s", r.status, err, r.raw)
	}
	return v
}

// expect fails the test unless the status is one of want; it returns the
// decoded object for JSON answers.
func (r resp) expect(t *testing.T, want ...int) obj {
	t.Helper()
	for _, w := range want {
		if r.status == w {
			if len(r.raw) == 0 {
				return nil
			}
			return r.json(t)
		}
	}
	t.Fatalf("status %d, want %v: %s", r.status, want, r.raw)
	return nil
}

// problem checks that the answer is an RFC 9457 problem with this status
// and code, and returns it.
func (r resp) problem(t *testing.T, status int, code string) obj {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (%s): %s", r.status, status, code, r.raw)
	}
	ct := r.header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	p := r.json(t)
	for _, f := range []string{"type", "title", "detail", "code"} {
		s, ok := p[f].(string)
		if !ok || (f != "detail" && s == "") {
			t.Errorf("problem field %q missing or not a string: %s", f, r.raw)
		}
	}
	if n, ok := p["status"].(json.Number); !ok || n.String() != fmt.Sprint(status) {
		t.Errorf("problem status %v, want %d", p["status"], status)
	}
	if p["code"] != code {
		t.Errorf("problem code %v, want %s: %s", p["code"], code, r.raw)
	}
	return p
}

// problemNaming is problem plus a check that detail names field.
func (r resp) problemNaming(t *testing.T, status int, code, field string) obj {
	t.Helper()
	p := r.problem(t, status, code)
	if d, _ := p["detail"].(string); !strings.Contains(d, field) {
		t.Errorf("detail %q does not name %q", d, field)
	}
	return p
}

// str returns a string field.
func str(t *testing.T, o obj, k string) string {
	t.Helper()
	s, ok := o[k].(string)
	if !ok {
		t.Fatalf("field %q is %T (%v), want string", k, o[k], o[k])
	}
	return s
}

// integer returns an integer field.
func integer(t *testing.T, o obj, k string) int64 {
	t.Helper()
	n, ok := o[k].(json.Number)
	if !ok {
		t.Fatalf("field %q is %T (%v), want number", k, o[k], o[k])
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("field %q = %v is not an integer", k, n)
	}
	return i
}

// sub returns an object field.
func sub(t *testing.T, o obj, k string) obj {
	t.Helper()
	m, ok := o[k].(obj)
	if !ok {
		t.Fatalf("field %q is %T, want object", k, o[k])
	}
	return m
}

// list returns an array field.
func list(t *testing.T, o obj, k string) []any {
	t.Helper()
	a, ok := o[k].([]any)
	if !ok {
		t.Fatalf("field %q is %T (%v), want array", k, o[k], o[k])
	}
	return a
}

// timestamp returns an RFC 3339 time field.
func timestamp(t *testing.T, o obj, k string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, str(t, o, k))
	if err != nil {
		t.Fatalf("field %q: %v", k, err)
	}
	return ts
}

// mentions reports whether s occurs anywhere in v (strings, keys, nested).
func mentions(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, s)
	case []any:
		for _, e := range x {
			if mentions(e, s) {
				return true
			}
		}
	case obj:
		for k, e := range x {
			if strings.Contains(k, s) || mentions(e, s) {
				return true
			}
		}
	}
	return false
}

// ids returns the "id" of each object in a.
func ids(t *testing.T, a []any) []string {
	t.Helper()
	out := make([]string, 0, len(a))
	for _, e := range a {
		o, ok := e.(obj)
		if !ok {
			t.Fatalf("array element is %T, want object", e)
		}
		out = append(out, str(t, o, "id"))
	}
	return out
}

// count runs a counting query against the test database.
func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// project creates a project as admin and returns its name (used in paths).
func (e *env) project(name string) string {
	e.t.Helper()
	e.post(e.admin, "/v1/projects", obj{"name": name}).expect(e.t, http.StatusCreated)
	return name
}

// token mints a token of role for project p and returns its secret.
func (e *env) token(p, name, role string) string {
	e.t.Helper()
	body := e.post(e.admin, "/v1/projects/"+p+"/tokens", obj{"name": name, "role": role}).expect(e.t, http.StatusCreated)
	return str(e.t, body, "token")
}

// item creates an item and returns it.
func (e *env) item(token, p string, fields obj) obj {
	e.t.Helper()
	return e.post(token, "/v1/projects/"+p+"/items", fields).expect(e.t, http.StatusCreated)
}

// getItem reads an item.
func (e *env) getItem(token, p, id string) obj {
	e.t.Helper()
	return e.get(token, "/v1/projects/"+p+"/items/"+id).expect(e.t, http.StatusOK)
}

// claim claims with body and expects a lease.
func (e *env) claim(token, p string, body obj) (lease, item obj) {
	e.t.Helper()
	out := e.post(token, "/v1/projects/"+p+"/claims", body).expect(e.t, http.StatusCreated)
	return sub(e.t, out, "lease"), sub(e.t, out, "item")
}

// leaseCall posts a worker mutation on a lease.
func (e *env) leaseCall(token, leaseID, op string, body obj) resp {
	e.t.Helper()
	return e.post(token, "/v1/leases/"+leaseID+"/"+op, body)
}

// world is a project with one token of each role, plus a second project.
type world struct {
	*env
	p, q           string // project names
	human, agent   string // tokens of p
	qHuman, qAgent string // tokens of q
}

func setupWorld(t *testing.T, tune ...func(*server.Config)) *world {
	t.Helper()
	e := setup(t, tune...)
	w := &world{env: e, p: e.project("alpha"), q: e.project("beta")}
	w.human = e.token(w.p, "alice", "human")
	w.agent = e.token(w.p, "bot", "agent")
	w.qHuman = e.token(w.q, "bob", "human")
	w.qAgent = e.token(w.q, "bot2", "agent")
	return w
}
