package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("alpha")
	agent := e.mustToken("alpha", "bot", "agent")

	t.Run("ErrMissing", func(t *testing.T) {
		r := e.do("GET", "/v1/projects", "", nil)
		r.problem(t, 401, "unauthenticated")
		if r.header.Get("WWW-Authenticate") == "" {
			t.Fatal("no WWW-Authenticate header")
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		e.do("GET", "/v1/projects", "wg_nope", nil).problem(t, 401, "unauthenticated")
		e.do("GET", "/v1/projects", agent.Token+"x", nil).problem(t, 401, "unauthenticated")
	})
	t.Run("ErrNotBearer", func(t *testing.T) {
		e.do("GET", "/v1/projects", "", nil, withHeader("Authorization", "Basic YTpi")).problem(t, 401, "unauthenticated")
	})
	t.Run("ErrTwoHeaders", func(t *testing.T) {
		// Either order, valid or not: which one counts would be a guess.
		second := func(v string) reqOpt { return func(r *http.Request) { r.Header.Add("Authorization", v) } }
		for name, pair := range map[string][2]string{
			"ValidFirst":  {agent.Token, "Bearer wg_nope"},
			"ValidSecond": {"wg_nope", "Bearer " + agent.Token},
			"BothValid":   {agent.Token, "Bearer " + agent.Token},
		} {
			t.Run(name, func(t *testing.T) {
				p := e.do("GET", "/v1/projects", pair[0], nil, second(pair[1])).problem(t, 400, "invalid_argument")
				field(t, p, "Authorization")
				// A lease step (authenticated lazily) refuses it the same way.
				e.do("POST", "/v1/projects/alpha/claims", pair[0], map[string]any{"worker": "w"}, second(pair[1])).problem(t, 400, "invalid_argument")
			})
		}
	})
	t.Run("ErrCookieIgnored", func(t *testing.T) {
		e.do("GET", "/v1/projects", "", nil, withHeader("Cookie", "wg_session="+agent.Token)).problem(t, 401, "unauthenticated")
	})
	t.Run("OK", func(t *testing.T) {
		var out struct{ Projects []project }
		e.do("GET", "/v1/projects", agent.Token, nil).ok(t, 200, &out)
		if len(out.Projects) != 1 || out.Projects[0].Name != "alpha" {
			t.Fatalf("agent sees %+v, want only alpha", out.Projects)
		}
	})
	t.Run("RevokeAtOnce", func(t *testing.T) {
		tok := e.mustToken("alpha", "short-lived", "human")
		e.do("GET", "/v1/projects/alpha", tok.Token, nil).ok(t, 200, nil)
		e.do("DELETE", "/v1/projects/alpha/tokens/"+tok.ID, adminToken, nil).ok(t, 204, nil)
		e.do("GET", "/v1/projects/alpha", tok.Token, nil).problem(t, 401, "unauthenticated")
		// Revoking again is harmless.
		e.do("DELETE", "/v1/projects/alpha/tokens/"+tok.ID, adminToken, nil).ok(t, 204, nil)
	})
}

func TestFirstStart(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	var (
		mu  sync.Mutex
		log bytes.Buffer
	)
	start := func() *server.Server {
		srv, err := server.Start(context.Background(), server.Config{
			DatabaseURL: url, Addr: "127.0.0.1:0",
			Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	mu.Lock()
	out := log.String()
	mu.Unlock()
	i := strings.Index(out, "token=wg_")
	if i < 0 {
		t.Fatalf("first start printed no token:\n%s", out)
	}
	bearer := strings.Fields(out[i+len("token="):])[0]
	if !strings.Contains(out, "ui=http://") {
		t.Fatalf("first start printed no UI address:\n%s", out)
	}
	e := &env{t: t, srv: srv, url: srv.URL(), pool: srv.Pool()}
	var p project
	e.do("GET", "/v1/projects/default", bearer, nil).ok(t, 200, &p)
	if p.Name != "default" {
		t.Fatalf("project %+v", p)
	}
	if n := e.count("SELECT count(*) FROM tokens WHERE position(convert_to($1, 'UTF8') in secret_hash) > 0", bearer); n != 0 {
		t.Fatal("token stored in clear")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)

	// A second start prints no token and keeps the first one working.
	mu.Lock()
	log.Reset()
	mu.Unlock()
	srv = start()
	defer srv.Shutdown(ctx)
	mu.Lock()
	out = log.String()
	mu.Unlock()
	if strings.Contains(out, "token=") {
		t.Fatalf("second start printed a token:\n%s", out)
	}
	e = &env{t: t, srv: srv, url: srv.URL(), pool: srv.Pool()}
	e.do("GET", "/v1/projects/default", bearer, nil).ok(t, 200, nil)
	if n := e.count("SELECT count(*) FROM tokens"); n != 1 {
		t.Fatalf("%d tokens after two starts, want 1", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRevokeAcrossReplicas: two servers on one database. A token used on B
// and revoked through A is refused by B's very next request, every time.
func TestRevokeAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	a := setup(t, func(c *server.Config) { c.DatabaseURL = url })
	b := setup(t, func(c *server.Config) { c.DatabaseURL = url })
	a.mustProject("alpha")
	for i := range 20 {
		tok := a.mustToken("alpha", "short-lived-"+strconv.Itoa(i), "agent")
		b.do("GET", "/v1/projects/alpha", tok.Token, nil).ok(t, 200, nil)
		b.do("GET", "/v1/projects/alpha", tok.Token, nil).ok(t, 200, nil)
		a.do("DELETE", "/v1/projects/alpha/tokens/"+tok.ID, adminToken, nil).ok(t, 204, nil)
		if r := b.do("GET", "/v1/projects/alpha", tok.Token, nil); r.status != 401 {
			t.Fatalf("try %d: the other replica answered %d right after the revocation, want 401", i+1, r.status)
		}
	}
}

// TestRevokedWhileWaiting: a token revoked while its long-poll claim
// waits is refused at the claim's next attempt (401), and nothing is
// granted. The token was checked at the first attempt only, so the claim
// was granted a lease for an item that became ready after the revocation:
// the revoked agent got the item and held it for the lease's length. Both
// ways of authenticating a claim are covered: a token this replica
// verified before (its check rides with the claim's first statement) and
// one it reads afresh. The item waits out a failure's backoff by a stub
// clock that moves only when the test says: the claim's first attempt
// finds nothing however slow the machine, and the item becomes ready only
// once the claim is waiting (a later attempt has begun) and its token is
// revoked.
func TestRevokedWhileWaiting(t *testing.T) {
	t.Parallel()
	stub := clock.NewStub(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := setup(t, func(c *server.Config) {
		c.Clock, c.MetricsOnMain = stub, true
		c.Lease.RetryBackoff, c.Lease.MaxRetryBackoff, c.Lease.WaitRecheck = 2*time.Second, 2*time.Second, 100*time.Millisecond
	})
	e.mustProject("alpha")
	f := itemFixture{env: e, agent: e.mustToken("alpha", "bot", "agent"), human: e.mustToken("alpha", "ann", "human")}
	// The claim transactions waiting claims began (the first attempt's
	// included): two more than before a claim means its first attempt has
	// ended and a later one, which checks the token again, has begun.
	attempts := func() int {
		n, err := strconv.Atoi(eventsFixture{itemFixture: f}.metric(t, "workgraph_wait_claim_transactions_total"))
		if err != nil {
			t.Fatalf("workgraph_wait_claim_transactions_total: %v", err)
		}
		return n
	}
	for _, verifiedBefore := range []bool{true, false} {
		name := "ReadAfresh"
		if verifiedBefore {
			name = "VerifiedBefore"
		}
		t.Run("Claim"+name, func(t *testing.T) {
			label := "rv-" + strings.ToLower(name)
			it := f.mustItem(f.human.Token, map[string]any{"title": "backing off", "labels": []string{label}})
			var first claimed
			f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, map[string]any{"worker": "other", "labels": []string{label}}).ok(t, 201, &first)
			f.do("POST", "/v1/leases/"+first.Lease.ID+"/fail", f.agent.Token, map[string]any{"epoch": first.Lease.Epoch}).ok(t, 200, nil)

			tok := f.mustToken("alpha", "waiting-"+name, "agent")
			if verifiedBefore {
				f.do("GET", "/v1/projects/alpha", tok.Token, nil).ok(t, 200, nil)
			}
			before := attempts()
			claim := make(chan resp, 1)
			go func() {
				claim <- f.do("POST", "/v1/projects/alpha/claims", tok.Token,
					map[string]any{"worker": "w-" + name, "wait_seconds": 30, "labels": []string{label}, "capabilities": []string{label}})
			}()
			// The claim waits: its first attempt found nothing (the item
			// is in its backoff by the stub clock) and it rechecks.
			deadline := time.Now().Add(10 * time.Second)
			for attempts() < before+2 {
				select {
				case r := <-claim:
					t.Fatalf("the claim answered %d before it waited: %s", r.status, r.body)
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("the claim did not wait within 10 s")
				}
			}
			f.do("DELETE", "/v1/projects/alpha/tokens/"+tok.ID, adminToken, nil).ok(t, 204, nil)
			stub.Advance(3 * time.Second) // the backoff is over: the item is ready
			select {
			case r := <-claim:
				r.problem(t, 401, "unauthenticated")
			case <-time.After(20 * time.Second):
				t.Fatal("the claim of a revoked token is still waiting")
			}
			if n := f.count("SELECT count(*) FROM leases WHERE item_id = $1", it.ID); n != 1 {
				t.Fatalf("the item has %d leases, want only the failed one: the revoked token was granted one", n)
			}
		})
	}
}
