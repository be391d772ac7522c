package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/api/openapi"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

const adminToken = "test-bootstrap-admin-token"

// env is a real server on a port of its own, against a fresh database.
type env struct {
	t    testing.TB
	srv  *server.Server
	url  string
	pool *pgxpool.Pool
}

// setup boots the real server (server.Start) with the bootstrap admin
// token; tune adjusts the config first.
func setup(t testing.TB, tune ...func(*server.Config)) *env {
	t.Helper()
	cfg := server.Config{BootstrapToken: adminToken, RateLimit: -1}
	for _, f := range tune {
		f(&cfg)
	}
	srv := servertest.Start(t, cfg)
	return &env{t: t, srv: srv, url: srv.URL(), pool: srv.Pool()}
}

// resp is an answer, body read.
type resp struct {
	status int
	header http.Header
	body   []byte
}

type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// do sends a request; body is JSON-encoded unless it is a string or
// []byte (sent verbatim).
func (e *env) do(method, path, token string, body any, opts ...reqOpt) resp {
	e.t.Helper()
	var r io.Reader
	var sent []byte // nil for a streamed body, which is not checked
	switch b := body.(type) {
	case nil:
	case string:
		sent = []byte(b)
		r = bytes.NewReader(sent)
	case []byte:
		sent = b
		r = bytes.NewReader(b)
	case io.Reader: // sent chunked: no Content-Length
		r = struct{ io.Reader }{b}
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		sent = raw
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if strings.HasPrefix(path, "/v1/") {
		if err := contract().CheckResponse(method, path, res.StatusCode, res.Header, raw); err != nil {
			e.t.Errorf("answer breaks openapi.json: %v", err)
		}
		if _, streamed := body.(io.Reader); res.StatusCode < 300 && !streamed {
			if err := contract().CheckRequest(method, path, req.Header, sent); err != nil {
				e.t.Errorf("the server accepted a request openapi.json does not allow: %v", err)
			}
		}
	}
	return resp{status: res.StatusCode, header: res.Header, body: raw}
}

// contract is the OpenAPI document, against which do checks every answer
// under /v1/.
var contract = sync.OnceValue(func() *openapi.Document {
	d, err := openapi.Load(api.OpenAPIDocument())
	if err != nil {
		panic(err)
	}
	return d
})

// ok fails unless the answer has the status, and decodes it into v.
func (r resp) ok(t testing.TB, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if v != nil {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("content type %q, want application/json", ct)
		}
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
}

// problem fails unless the answer is a well-formed problem+json document
// with the status and code; it returns the document.
func (r resp) problem(t testing.TB, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("content type %q, want application/problem+json; body %s", ct, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decode problem %s: %v", r.body, err)
	}
	if p["code"] != code {
		t.Fatalf("code %v, want %s; body %s", p["code"], code, r.body)
	}
	if s, _ := p["status"].(float64); int(s) != status {
		t.Fatalf("problem status %v, want %d", p["status"], status)
	}
	for _, k := range []string{"type", "title", "detail"} {
		if s, _ := p[k].(string); s == "" {
			t.Fatalf("problem lacks %q: %s", k, r.body)
		}
	}
	return p
}

// field checks the problem names the field.
func field(t testing.TB, p map[string]any, want string) {
	t.Helper()
	if p["field"] != want {
		t.Fatalf("problem field %v, want %q (detail %v)", p["field"], want, p["detail"])
	}
	if d, _ := p["detail"].(string); !strings.Contains(d, want) {
		t.Fatalf("detail %q does not name %q", d, want)
	}
}

// count runs a count(*) query against the server's database.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

type project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type token struct {
	Token     string  `json:"token"`
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Role      string  `json:"role"`
	ProjectID *string `json:"project_id"`
}

// mustProject creates a project as admin.
func (e *env) mustProject(name string) project {
	e.t.Helper()
	var p project
	e.do("POST", "/v1/projects", adminToken, map[string]any{"name": name}).ok(e.t, 201, &p)
	return p
}

// mustToken mints a token of the role in the project as admin.
func (e *env) mustToken(projectName, name, role string) token {
	e.t.Helper()
	var tok token
	e.do("POST", "/v1/projects/"+projectName+"/tokens", adminToken, map[string]any{"name": name, "role": role}).ok(e.t, 201, &tok)
	return tok
}
