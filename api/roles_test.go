package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestRoleBoundaries sends every role-restricted route a token of each role
// that may not use it: 403 forbidden, and nothing stored.
func TestRoleBoundaries(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.agent.Token, map[string]any{"title": "x"})
	c := f.mustClaim("w")
	p := "/v1/projects/alpha"
	// A real request of this project: one of another project, or none at
	// all, is not found whatever the role.
	held := f.mustItem(f.human.Token, map[string]any{"title": "held"})
	var hold struct {
		ID string `json:"id"`
	}
	f.do("POST", p+"/items/"+held.ID+"/attention", f.human.Token, map[string]any{"question": "wait"}).ok(t, 201, &hold)
	att := hold.ID
	cases := []struct {
		method, path string
		denied       []token
	}{
		{"POST", "/v1/projects", []token{f.human, f.agent}},
		{"POST", p + "/tokens", []token{f.human, f.agent}},
		{"GET", p + "/tokens", []token{f.human, f.agent}},
		{"DELETE", p + "/tokens/" + f.agent.ID, []token{f.human, f.agent}},
		{"PATCH", p + "/items/" + it.ID, []token{f.agent}},
		{"POST", p + "/items/" + it.ID + "/cancel", []token{f.agent}},
		{"DELETE", p + "/items/" + it.ID + "/dependencies/" + it.ID, []token{f.agent}},
		{"POST", p + "/items/" + it.ID + "/attention", []token{f.agent}},
		{"POST", "/v1/attention/" + att + "/resolve", []token{f.agent}},
		{"POST", "/v1/attention/" + att + "/dismiss", []token{f.agent}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/stop", []token{f.agent}},
		{"POST", p + "/claims", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/heartbeat", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/complete", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/release", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/fail", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/decompose", []token{f.human}},
		{"POST", "/v1/leases/" + c.Lease.ID + "/attention", []token{f.human}},
	}
	for _, tc := range cases {
		for _, tok := range tc.denied {
			t.Run(tc.method+" "+tc.path+" as "+tok.Role, func(t *testing.T) {
				p := f.do(tc.method, tc.path, tok.Token, `{"epoch": 1, "name": "n", "role": "agent", "worker": "w", "answer": "a", "question": "q", "result": 1, "error": "e", "children": [{"key": "k", "title": "t"}]}`).problem(t, http.StatusForbidden, "forbidden")
				want := map[string]string{"agent": "an agent token may not ", "human": "a human token may not "}[tok.Role]
				if d, _ := p["detail"].(string); !strings.HasPrefix(d, want) {
					t.Fatalf("detail %q, want it to begin %q", d, want)
				}
			})
		}
	}
	if n := f.count("SELECT count(*) FROM leases"); n != 1 {
		t.Fatalf("%d leases after refusals, want 1", n)
	}
	var l lease
	f.do("GET", "/v1/leases/"+c.Lease.ID, f.human.Token, nil).ok(t, 200, &l)
	if l.EndedAt != nil {
		t.Fatal("a refused mutation ended the lease")
	}
	if n := f.count("SELECT count(*) FROM tokens"); n != 4 {
		t.Fatalf("%d tokens after refusals, want 4", n)
	}
	if n := f.count("SELECT count(*) FROM attention_requests WHERE state = 'open'"); n != 1 {
		t.Fatal("a refused hold was stored, or the hold was resolved")
	}
	// Reads are open to every role of the project.
	for _, tok := range []token{f.human, f.agent} {
		for _, path := range []string{p, p + "/items", p + "/items/" + it.ID, p + "/items/" + it.ID + "/graph", p + "/graph",
			p + "/items/" + it.ID + "/leases", p + "/items/" + it.ID + "/attention", p + "/leases", p + "/attention", p + "/workers",
			"/v1/leases/" + c.Lease.ID} {
			f.do("GET", path, tok.Token, nil).ok(t, 200, nil)
			f.do("GET", path, f.otherHuman.Token, nil).problem(t, 404, "not_found")
		}
	}
}

// TestIdempotencyConcurrent sends the same keyed request from many
// goroutines at once: it is applied once; every answer is the original, a
// replay of it, or 409 request_in_progress while the first is in flight.
func TestIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const n = 16
	var wg sync.WaitGroup
	answers := make(chan resp, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "once"}, withHeader("Idempotency-Key", "same"))
		}()
	}
	wg.Wait()
	close(answers)
	var created string
	for r := range answers {
		switch r.status {
		case 201:
			if created != "" && string(r.body) != created {
				t.Fatalf("two different 201 answers: %s and %s", created, r.body)
			}
			created = string(r.body)
		case 409:
			r.problem(t, 409, "request_in_progress")
		default:
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	if created == "" {
		t.Fatal("no request was answered 201")
	}
	if c := e.count("SELECT count(*) FROM projects WHERE name = 'once'"); c != 1 {
		t.Fatalf("%d projects, want 1", c)
	}
}
