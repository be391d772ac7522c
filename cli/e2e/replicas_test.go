package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// startReplicaServe runs `workgraph serve` on dbURL with /metrics on its main
// address, a fast sweeper, and extra flags, and waits until it is ready.
func startReplicaServe(t *testing.T, dbURL string, extra ...string) *replica {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return startReplicaAt(t, dbURL, addr, append([]string{"--metrics-on-main", "--sweep-interval", "50ms"}, extra...)...)
}

// api sends a JSON request to the replica and decodes the answer into out
// (when not nil); it returns the status.
func (r *replica) api(t *testing.T, token, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, r.url, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return res.StatusCode
}

// must is api, failing unless the status is want.
func (r *replica) must(t *testing.T, want int, token, method, path string, body, out any) {
	t.Helper()
	if got := r.api(t, token, method, path, body, out); got != want {
		t.Fatalf("%s %s on %s: %d, want %d", method, path, r.url, got, want)
	}
}

// metric is the value of one series of the replica's /metrics (0 when
// absent).
func (r *replica) metric(t *testing.T, series string) float64 {
	t.Helper()
	res, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

type replicaClaim struct {
	Lease struct {
		ID    string `json:"id"`
		Epoch int64  `json:"epoch"`
	} `json:"lease"`
	Item struct {
		ID string `json:"id"`
	} `json:"item"`
}

// TestThreeReplicas runs three `serve` processes on one database: their
// sweepers reap each expired lease once cluster-wide, a claim long-polling
// on one replica is woken by a release through another, and a token
// revoked through one is refused by the others at once. (Rate limits are
// per replica: docs/operations.md.)
func TestThreeReplicas(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	rs := []*replica{startReplicaServe(t, dbURL), startReplicaServe(t, dbURL), startReplicaServe(t, dbURL)}
	a, b, c := rs[0], rs[1], rs[2]
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("SweptOnce", func(t *testing.T) {
		// One lease in each of n projects: a claim also ends the expired
		// leases of its own project, so with one project the later claims
		// could end the first leases when the claims took longer than a
		// lease (seen in CI: 11 reaped by sweepers, 12 expired).
		const n = 12
		for i := range n {
			p := fmt.Sprint("swept-", i)
			a.must(t, 201, adminToken, "POST", "/v1/projects", map[string]any{"name": p}, nil)
			rs[i%3].must(t, 201, adminToken, "POST", "/v1/projects/"+p+"/items", map[string]any{"title": fmt.Sprint("item ", i)}, nil)
		}
		for i := range n {
			rs[i%3].must(t, 201, adminToken, "POST", "/v1/projects/swept-"+fmt.Sprint(i)+"/claims", map[string]any{"worker": fmt.Sprint("w", i), "lease_seconds": 1}, nil)
		}
		// No claim runs in these projects from here on: only the three
		// sweepers end the expired leases.
		eventually(t, 30*time.Second, "the sweepers to end every expired lease", func() bool {
			return count(`SELECT count(*) FROM leases l JOIN projects p ON p.id = l.project_id WHERE p.name LIKE 'swept-%' AND l.ended_at IS NULL`) == 0
		})
		if got := count(`SELECT count(*) FROM leases l JOIN projects p ON p.id = l.project_id WHERE p.name LIKE 'swept-%' AND l.outcome = 'expired'`); got != n {
			t.Fatalf("%d leases expired, want %d", got, n)
		}
		// A sweeper counts what it reaped when its run ends, after it
		// committed each project's reap (and swept the other projects,
		// no-progress leases and budgets): the leases can be seen ended
		// before the last run that ended one is counted. The counts
		// reach n and stop there; more would be a lease reaped twice.
		var reaped, expired float64
		var sweeping int
		counted := func() bool {
			reaped, expired, sweeping = 0, 0, 0
			for _, r := range rs {
				reaped += r.metric(t, "workgraph_sweeper_leases_reaped_total")
				expired += r.metric(t, `workgraph_lease_outcomes_total{outcome="expired"}`)
				if r.metric(t, `workgraph_sweeper_runs_total{result="ok"}`) > 0 {
					sweeping++
				}
			}
			return reaped >= n && expired >= n
		}
		deadline := time.Now().Add(30 * time.Second)
		for !counted() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if reaped != n || expired != n {
			t.Fatalf("the replicas' sweepers reaped %v leases (expired outcomes %v) in all, want each of the %d once", reaped, expired, n)
		}
		if sweeping != 3 {
			t.Fatalf("%d of 3 sweepers ran", sweeping)
		}
	})

	t.Run("LongPollWokenByAnotherReplica", func(t *testing.T) {
		a.must(t, 201, adminToken, "POST", "/v1/projects", map[string]any{"name": "poll"}, nil)
		a.must(t, 201, adminToken, "POST", "/v1/projects/poll/items", map[string]any{"title": "only"}, nil)
		var held replicaClaim
		b.must(t, 201, adminToken, "POST", "/v1/projects/poll/claims", map[string]any{"worker": "holder", "lease_seconds": 120}, &held)
		type answer struct {
			status int
			claim  replicaClaim
			at     time.Time
		}
		woke := make(chan answer, 1)
		go func() {
			var cl replicaClaim
			st, body := post(a.url+"/v1/projects/poll/claims", adminToken, "poll-1", `{"worker": "waiter", "wait_seconds": 30}`)
			_ = json.Unmarshal([]byte(body), &cl)
			woke <- answer{st, cl, time.Now()}
		}()
		// Let the claim find nothing and start waiting on replica a.
		time.Sleep(300 * time.Millisecond)
		select {
		case w := <-woke:
			t.Fatalf("the claim answered %d before the release", w.status)
		default:
		}
		released := time.Now()
		c.must(t, 200, adminToken, "POST", "/v1/leases/"+held.Lease.ID+"/release", map[string]any{"epoch": held.Lease.Epoch}, nil)
		w := <-woke
		if w.status != 201 || w.claim.Item.ID != held.Item.ID || w.claim.Lease.Epoch != held.Lease.Epoch+1 {
			t.Fatalf("woken claim: %d %+v", w.status, w.claim)
		}
		// Woken by the notification, not by the 5 s re-check a waiting
		// claim also makes (this bounds which path woke it, not speed).
		if d := w.at.Sub(released); d >= 4*time.Second {
			t.Fatalf("the claim answered %s after the release: not woken by it", d)
		}
	})

	t.Run("RevokedEverywhere", func(t *testing.T) {
		a.must(t, 201, adminToken, "POST", "/v1/projects", map[string]any{"name": "revoke"}, nil)
		var tok struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		a.must(t, 201, adminToken, "POST", "/v1/projects/revoke/tokens", map[string]any{"name": "bot", "role": "agent"}, &tok)
		for _, r := range rs {
			r.must(t, 200, tok.Token, "GET", "/v1/projects/revoke/items", nil, nil)
		}
		a.must(t, 204, adminToken, "DELETE", "/v1/projects/revoke/tokens/"+tok.ID, nil, nil)
		for _, r := range []*replica{b, c, a} {
			r.must(t, 401, tok.Token, "GET", "/v1/projects/revoke/items", nil, nil)
		}
	})
}
