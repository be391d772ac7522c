package api_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/server"
)

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := func(k string) reqOpt { return withHeader("Idempotency-Key", k) }

	t.Run("Replay", func(t *testing.T) {
		first := e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "alpha"}, key("k1"))
		first.ok(t, 201, nil)
		if first.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("first answer marked replayed")
		}
		again := e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "alpha"}, key("k1"))
		again.ok(t, 201, nil)
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("replay not marked Idempotent-Replayed: true")
		}
		if !bytes.Equal(first.body, again.body) {
			t.Fatalf("replayed body %s, want %s", again.body, first.body)
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'alpha'"); n != 1 {
			t.Fatalf("%d projects, want 1", n)
		}
		// Without the key the same request runs again (and finds the name taken).
		e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "alpha"}).problem(t, 409, "already_exists")
	})
	t.Run("ErrDifferentBody", func(t *testing.T) {
		p := e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "beta"}, key("k1")).problem(t, 409, "conflict")
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'beta'"); n != 0 {
			t.Fatalf("refused request stored a project: %v", p)
		}
	})
	t.Run("ErrDifferentPath", func(t *testing.T) {
		e.do("POST", "/v1/projects/alpha/tokens", adminToken, map[string]any{"name": "alpha"}, key("k1")).problem(t, 409, "conflict")
	})
	t.Run("RefusalReplayed", func(t *testing.T) {
		e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "Bad Name"}, key("k2")).problem(t, 400, "invalid_argument")
		r := e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "Bad Name"}, key("k2"))
		r.problem(t, 400, "invalid_argument")
		if r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("refusal not replayed")
		}
	})
	t.Run("ErrInFlight", func(t *testing.T) {
		// A first request still running: its record has no status yet.
		_, err := e.pool.Exec(context.Background(), `
			INSERT INTO idempotency_keys (token_id, key, request_hash, expires_at)
			SELECT id, 'k3', sha256('other'::bytea), now() + interval '1 hour' FROM tokens WHERE name = 'bootstrap'`)
		if err != nil {
			t.Fatal(err)
		}
		e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "gamma"}, key("k3")).problem(t, 409, "conflict")
	})
	t.Run("Expired", func(t *testing.T) {
		_, err := e.pool.Exec(context.Background(), `
			INSERT INTO idempotency_keys (token_id, key, request_hash, status, response, created_at, expires_at)
			SELECT id, 'k4', sha256('other'::bytea), 201, '{}', now() - interval '25 hours', now() - interval '1 hour'
			FROM tokens WHERE name = 'bootstrap'`)
		if err != nil {
			t.Fatal(err)
		}
		r := e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "delta"}, key("k4"))
		r.ok(t, 201, nil)
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("an expired key was replayed")
		}
	})
	t.Run("PerToken", func(t *testing.T) {
		e.mustToken("alpha", "ops", "admin")
		var tok token
		e.do("POST", "/v1/projects/alpha/tokens", adminToken, map[string]any{"name": "ops2", "role": "admin"}).ok(t, 201, &tok)
		// The same key from another token is another request.
		e.do("POST", "/v1/projects", tok.Token, map[string]any{"name": "epsilon"}, key("k1")).ok(t, 201, nil)
	})
	t.Run("ErrBadKey", func(t *testing.T) {
		long := string(bytes.Repeat([]byte("k"), 256))
		field(t, e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "zeta"}, key(long)).problem(t, 400, "invalid_argument"), "Idempotency-Key")
		// A key sent empty (a client's unset variable) or blank was read as
		// no key: the write ran unprotected, and its retry ran again. A key
		// with a control or bidirectional character is no visible text.
		for _, k := range []string{"", " ", "\t", "a\tb", "a\u202eb"} {
			field(t, e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "zeta"}, key(k)).problem(t, 400, "invalid_argument"), "Idempotency-Key")
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'zeta'"); n != 0 {
			t.Fatalf("a refused key created the project %d times", n)
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *server.Config) { c.RateLimit = 0.01; c.RateBurst = 3 })
	for i := range 3 {
		if r := e.do("GET", "/v1/projects", adminToken, nil); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r := e.do("GET", "/v1/projects", adminToken, nil)
	r.problem(t, 429, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	// Other tokens have their own bucket. (Minting one spends no more of
	// the admin's budget than this one request: it is refused too.)
	e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "x"}).problem(t, 429, "rate_limited")
	if n := e.count("SELECT count(*) FROM projects"); n != 0 {
		t.Fatal("a rate-limited request was applied")
	}
}

// TestIdempotentClaim retries a long-polling claim: while the first is
// waiting the retry is refused as in flight; once answered, a retry gets
// the same lease, not a second one.
func TestIdempotentClaim(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	body := map[string]any{"worker": "w1", "wait_seconds": 30}
	key := withHeader("Idempotency-Key", "claim-1")
	first := make(chan resp, 1)
	go func() { first <- f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, key) }()

	deadline := time.Now().Add(10 * time.Second)
	for f.count("SELECT count(*) FROM idempotency_keys WHERE key = 'claim-1'") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first claim never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, key)
	in.problem(t, 409, "request_in_progress")
	if in.header.Get("Retry-After") == "" {
		t.Fatal("request_in_progress without Retry-After")
	}

	f.mustItem(f.human.Token, map[string]any{"title": "work"})
	var c1, c2 claimed
	r1 := <-first
	r1.ok(t, 201, &c1)
	r2 := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, key)
	r2.ok(t, 201, &c2)
	if r2.header.Get("Idempotent-Replayed") != "true" || c2.Lease.ID != c1.Lease.ID {
		t.Fatalf("retry got lease %s (replayed %q), want %s", c2.Lease.ID, r2.header.Get("Idempotent-Replayed"), c1.Lease.ID)
	}
	if n := f.count("SELECT count(*) FROM leases"); n != 1 {
		t.Fatalf("%d leases, want 1", n)
	}
}

// TestIdempotencyOwnerDied covers records left in progress by a request
// whose server died (simulated at the database: a record nobody renews).
func TestIdempotencyOwnerDied(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := func(k string) reqOpt { return withHeader("Idempotency-Key", k) }
	// leave stores an in-progress record of the request a POST /v1/projects
	// of name would make, as a server that died while running it leaves it.
	leave := func(t *testing.T, k, name, lockedUntil string, effect bool) {
		t.Helper()
		body := `{"name":"` + name + `"}`
		_, err := e.pool.Exec(context.Background(), `
			INSERT INTO idempotency_keys (token_id, key, request_hash, owner, locked_until, effect_at, expires_at)
			SELECT id, $1, sha256(convert_to('POST' || chr(10) || '/v1/projects?' || chr(10) || $2, 'UTF8')),
			       gen_random_uuid(), now() + $3::interval, CASE WHEN $4 THEN now() END, now() + interval '24 hours'
			FROM tokens WHERE name = 'bootstrap'`, k, body, lockedUntil, effect)
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("OwnerAlive", func(t *testing.T) {
		leave(t, "alive", "p-alive", "1 minute", false)
		r := e.do("POST", "/v1/projects", adminToken, `{"name":"p-alive"}`, key("alive"))
		r.problem(t, 409, "request_in_progress")
		if r.header.Get("Retry-After") == "" {
			t.Fatal("request_in_progress without Retry-After")
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'p-alive'"); n != 0 {
			t.Fatal("a request still in progress elsewhere ran again")
		}
	})
	t.Run("OwnerDiedBeforeEffect", func(t *testing.T) {
		// Its lock lapsed a moment ago: the retry runs the request.
		leave(t, "dead", "p-dead", "-1 second", false)
		r := e.do("POST", "/v1/projects", adminToken, `{"name":"p-dead"}`, key("dead"))
		r.ok(t, 201, nil)
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a request that never answered was replayed")
		}
		again := e.do("POST", "/v1/projects", adminToken, `{"name":"p-dead"}`, key("dead"))
		again.ok(t, 201, nil)
		if again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("the answer of the run that took over was not kept")
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'p-dead'"); n != 1 {
			t.Fatalf("%d projects, want 1", n)
		}
	})
	t.Run("ErrOutcomeUnknown", func(t *testing.T) {
		// Its effect committed, then it died before storing the answer: the
		// retry is told so and nothing runs again.
		leave(t, "lost", "p-lost", "-1 second", true)
		p := e.do("POST", "/v1/projects", adminToken, `{"name":"p-lost"}`, key("lost")).problem(t, 409, "outcome_unknown")
		if p["effect_at"] == nil {
			t.Fatalf("outcome_unknown without effect_at: %v", p)
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'p-lost'"); n != 0 {
			t.Fatal("a request that took effect ran again")
		}
		// Still alive but with its effect committed: in progress, not unknown.
		leave(t, "lost-alive", "p-lost2", "1 minute", true)
		e.do("POST", "/v1/projects", adminToken, `{"name":"p-lost2"}`, key("lost-alive")).problem(t, 409, "request_in_progress")
	})
}

// TestIdempotentClaimTakenOver: a long-polling claim whose record another
// request took over (its server was thought dead) claims nothing: its
// write transaction is fenced on the record and rolls back.
func TestIdempotentClaimTakenOver(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	body := map[string]any{"worker": "w1", "wait_seconds": 30}
	first := make(chan resp, 1)
	go func() {
		first <- f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "claim-2"))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for f.count("SELECT count(*) FROM idempotency_keys WHERE key = 'claim-2'") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first claim never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Another replica takes the record over.
	if _, err := f.pool.Exec(context.Background(), `UPDATE idempotency_keys SET owner = gen_random_uuid() WHERE key = 'claim-2'`); err != nil {
		t.Fatal(err)
	}
	f.mustItem(f.human.Token, map[string]any{"title": "work"})
	r := <-first
	r.problem(t, 409, "conflict")
	if n := f.count("SELECT count(*) FROM leases"); n != 0 {
		t.Fatalf("%d leases granted by a request that no longer owned its key, want 0", n)
	}
}

// TestIdempotentClaimEffect: a claim takes effect when it grants a lease,
// not when it only ends expired leases; a retry whose answer was lost
// after the lease was granted is answered with that lease.
func TestIdempotentClaimEffect(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	ctx := context.Background()
	record := func(k string) (effect bool, ref *string) {
		t.Helper()
		if err := f.pool.QueryRow(ctx, `SELECT effect_at IS NOT NULL, effect_ref FROM idempotency_keys WHERE key = $1`, k).Scan(&effect, &ref); err != nil {
			t.Fatal(err)
		}
		return effect, ref
	}
	// lose turns the answered record of k into one whose server died after
	// the effect and before storing the answer.
	lose := func(k string) {
		t.Helper()
		tag, err := f.pool.Exec(ctx, `UPDATE idempotency_keys SET status = NULL, content_type = NULL, response = NULL,
			completed_at = NULL, owner = gen_random_uuid(), locked_until = now() - interval '1 second' WHERE key = $1`, k)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("losing the answer of %s: %v", k, err)
		}
	}

	t.Run("ReapingIsNoEffect", func(t *testing.T) {
		var c claimed
		f.mustItem(f.human.Token, map[string]any{"title": "expires"})
		f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, map[string]any{"worker": "w0"}).ok(t, 201, &c)
		if _, err := f.pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second' WHERE id = $1`, c.Lease.ID); err != nil {
			t.Fatal(err)
		}
		// This claim ends the expired lease (a write) and finds nothing it may
		// take (the label): no effect, so a retry after a crash runs again.
		body := map[string]any{"worker": "w1", "labels": []string{"nothing-has-it"}}
		f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "reap-1")).ok(t, 204, nil)
		if n := f.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'expired'`, c.Lease.ID); n != 1 {
			t.Fatal("the claim did not end the expired lease")
		}
		if effect, _ := record("reap-1"); effect {
			t.Fatal("a claim that granted nothing was marked as having taken effect")
		}
	})
	t.Run("LostAnswerRecovered", func(t *testing.T) {
		body := map[string]any{"worker": "w2"}
		var first, again claimed
		f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "got-1")).ok(t, 201, &first)
		if effect, ref := record("got-1"); !effect || ref == nil || *ref != first.Lease.ID {
			t.Fatalf("record of the claim: effect %v, ref %v, want lease %s", effect, ref, first.Lease.ID)
		}
		lose("got-1")
		r := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "got-1"))
		r.ok(t, 201, &again)
		if again.Lease.ID != first.Lease.ID || again.Item.ID != first.Item.ID || r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry got lease %s of item %s (replayed %q), want lease %s of item %s",
				again.Lease.ID, again.Item.ID, r.header.Get("Idempotent-Replayed"), first.Lease.ID, first.Item.ID)
		}
		if n := f.count(`SELECT count(*) FROM leases WHERE worker = 'w2'`); n != 1 {
			t.Fatalf("%d leases for w2, want 1", n)
		}
		// Once that lease has ended, the retry can only say so.
		f.do("POST", "/v1/leases/"+first.Lease.ID+"/release", f.agent.Token, map[string]any{"epoch": first.Lease.Epoch}).ok(t, 200, nil)
		p := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "got-1")).problem(t, 409, "outcome_unknown")
		if p["lease_id"] != first.Lease.ID {
			t.Fatalf("outcome_unknown names lease %v, want %s", p["lease_id"], first.Lease.ID)
		}
		if n := f.count(`SELECT count(*) FROM leases WHERE worker = 'w2'`); n != 1 {
			t.Fatalf("%d leases for w2, want 1", n)
		}
	})
}

// TestIdempotentClaimInProgressWhileWaiting: a retry of a long-polling
// claim (the same Idempotency-Key) while the first still waits is answered
// request_in_progress at once. It used to join the wait without claiming
// (another waiter of its filter had just found nothing) and learned of the
// record only at its first claim, a recheck later: here the recheck is an
// hour, so only the fix answers before the wait ends.
func TestIdempotentClaimInProgressWhileWaiting(t *testing.T) {
	t.Parallel()
	f := itemSetup(t, func(c *server.Config) { c.Lease.WaitRecheck = time.Hour })
	body := map[string]any{"worker": "w1", "wait_seconds": 20}
	key := withHeader("Idempotency-Key", "claim-waiting")
	first := make(chan resp, 1)
	go func() { first <- f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, key) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.count("SELECT count(*) FROM idempotency_keys WHERE key = 'claim-waiting'") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first claim never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	retry := make(chan resp, 1)
	go func() { retry <- f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, key) }()
	var in resp
	select {
	case in = <-retry:
	case r := <-first:
		t.Fatalf("the first claim ended (%d) before the retry was answered", r.status)
	}
	in.problem(t, 409, "request_in_progress")

	f.mustItem(f.human.Token, map[string]any{"title": "work"})
	var c claimed
	(<-first).ok(t, 201, &c)
	if n := f.count("SELECT count(*) FROM leases"); n != 1 {
		t.Fatalf("%d leases, want 1", n)
	}
}

// TestIdempotencyKeyEveryWrite: an Idempotency-Key makes every write
// retry-safe, not only a POST: a PATCH, a PUT and a DELETE retried with
// their key (their first answer lost, say) get that answer again, marked
// replayed, instead of running again: a second edit of a versioned
// PATCH would be a 409 conflict, a second DELETE a 404.
func TestIdempotencyKeyEveryWrite(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	key := func(k string) reqOpt { return withHeader("Idempotency-Key", k) }
	a := f.mustItem(f.human.Token, map[string]any{"title": "a"})
	b := f.mustItem(f.human.Token, map[string]any{"title": "b", "depends_on": []string{a.ID}})
	twice := func(t *testing.T, method, path string, body any, k string, status int) {
		t.Helper()
		first := f.do(method, path, f.human.Token, body, key(k))
		first.ok(t, status, nil)
		again := f.do(method, path, f.human.Token, body, key(k))
		again.ok(t, status, nil)
		if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
			t.Fatalf("%s %s again: replayed %q, body %s; want the first answer %s replayed",
				method, path, again.header.Get("Idempotent-Replayed"), again.body, first.body)
		}
		if first.header.Get("ETag") != again.header.Get("ETag") {
			t.Fatalf("%s %s again: ETag %q, want the first answer's %q", method, path, again.header.Get("ETag"), first.header.Get("ETag"))
		}
	}
	t.Run("Post", func(t *testing.T) {
		// An item's answer carries its version as ETag, for If-Match: the
		// replay too.
		twice(t, "POST", "/v1/projects/alpha/items", map[string]any{"title": "c"}, "post-1", 201)
	})
	t.Run("Patch", func(t *testing.T) {
		twice(t, "PATCH", "/v1/projects/alpha/items/"+a.ID, map[string]any{"priority": 3, "version": a.Version}, "patch-1", 200)
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+a.ID, f.human.Token, nil).ok(t, 200, &got)
		if got.Version != a.Version+1 {
			t.Fatalf("version %d, want %d: the edit ran twice", got.Version, a.Version+1)
		}
		// The same key with another edit is refused, as for a POST.
		f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.human.Token, map[string]any{"priority": 4}, key("patch-1")).problem(t, 409, "conflict")
	})
	t.Run("Put", func(t *testing.T) {
		twice(t, "PUT", "/v1/projects/alpha/items/"+a.ID+"/budget", map[string]any{"max_tokens": 1000}, "put-1", 200)
	})
	t.Run("Delete", func(t *testing.T) {
		twice(t, "DELETE", "/v1/projects/alpha/items/"+b.ID+"/dependencies/"+a.ID, nil, "delete-1", 204)
	})
}

// TestIdempotentLargeAnswer: a plan import whose answer is larger than any
// other route's (here over 4 MiB: titles of 500 four-byte characters) is
// replayed like any other answer, not refused as outcome_unknown although
// the import committed.
func TestIdempotentLargeAnswer(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	title := strings.Repeat("\U0001F600", 500) // 2,000 bytes
	items := make([]map[string]any, 2300)
	for i := range items {
		items[i] = map[string]any{"key": fmt.Sprintf("k%d", i), "title": title}
	}
	plan := map[string]any{"items": items}
	first := f.do("POST", "/v1/projects/alpha/plans", f.human.Token, plan, withHeader("Idempotency-Key", "big-1"))
	first.ok(t, 201, nil)
	if len(first.body) <= 4<<20 {
		t.Fatalf("the answer is %d bytes: the test needs one over 4 MiB", len(first.body))
	}
	again := f.do("POST", "/v1/projects/alpha/plans", f.human.Token, plan, withHeader("Idempotency-Key", "big-1"))
	again.ok(t, 201, nil)
	if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		t.Fatalf("retry: replayed %q, %d bytes; want the first answer (%d bytes) replayed",
			again.header.Get("Idempotent-Replayed"), len(again.body), len(first.body))
	}
	if n := f.count("SELECT count(*) FROM items"); n != len(items) {
		t.Fatalf("%d items, want %d: the import ran twice", n, len(items))
	}
}

// TestIdempotentLargeClaim: a batch claim's answer carries its items'
// bodies, so it is not bounded by its request; one over 8 MiB (two items
// whose bodies of "<" JSON writes six bytes each) is replayed to a retry,
// not answered outcome_unknown while its leases stay held until they
// expire.
func TestIdempotentLargeClaim(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	// Sent as written: "<" is one byte of the request, six of the answer.
	item := `{"title": "big", "body": "` + strings.Repeat("<", 900_000) + `"}`
	for range 2 {
		f.do("POST", "/v1/projects/alpha/items", f.human.Token, item).ok(t, 201, nil)
	}
	claim := map[string]any{"worker": "w", "max_items": 2}
	first := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, claim, withHeader("Idempotency-Key", "big-claim"))
	first.ok(t, 201, nil)
	if len(first.body) <= 8<<20 {
		t.Fatalf("the answer is %d bytes: the test needs one over 8 MiB", len(first.body))
	}
	again := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, claim, withHeader("Idempotency-Key", "big-claim"))
	again.ok(t, 201, nil)
	if again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.body, again.body) {
		t.Fatalf("retry: replayed %q, %d bytes; want the first answer (%d bytes) replayed",
			again.header.Get("Idempotent-Replayed"), len(again.body), len(first.body))
	}
	if n := f.count("SELECT count(*) FROM leases"); n != 2 {
		t.Fatalf("%d leases, want 2: the claim ran twice", n)
	}
}
