package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// replica is a `workgraph serve` process on a database of the test's own.
type replica struct {
	cmd  *exec.Cmd
	url  string
	logs *bytes.Buffer
}

// startReplica runs `workgraph serve` against dbURL on a free port and
// waits until it answers /readyz.
func startReplica(t *testing.T, dbURL string) *replica {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return startReplicaAt(t, dbURL, addr)
}

// startReplicaAt is startReplica on a given address, with extra serve
// flags.
func startReplicaAt(t *testing.T, dbURL, addr string, extra ...string) *replica {
	t.Helper()
	r := &replica{url: "http://" + addr, logs: &bytes.Buffer{}}
	args := append([]string{"serve", "--database-url", dbURL, "--addr", addr, "--bootstrap-token", adminToken, "--rate-limit", "-1"}, extra...)
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = []string{"HOME=" + t.TempDir()}
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
	})
	eventually(t, time.Minute, "the replica to be ready", func() bool {
		res, err := http.Get(r.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return r
}

// kill ends the replica with SIGKILL: no shutdown, no cleanup.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = r.cmd.Wait()
}

// transportFailures is an HTTP transport that counts requests that got no
// answer.
type transportFailures struct{ n atomic.Int32 }

func (f *transportFailures) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		f.n.Add(1)
	}
	return res, err
}

// post sends a POST with an Idempotency-Key and returns status and body.
func post(url, token, key, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestKilledMidClaim kills a replica with -9 while it long-polls a claim
// carrying an Idempotency-Key, restarts it and retries the same request:
// the key left in progress by the dead server frees itself within a few
// seconds and the retry runs the claim once.
func TestKilledMidClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	r1 := startReplica(t, dbURL)
	admin, err := client.New(r1.url, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "crash"); err != nil {
		t.Fatal(err)
	}
	tk, err := admin.CreateToken(ctx, "crash", client.CreateTokenRequest{Name: "bot", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	const body = `{"worker": "w1", "wait_seconds": 30}`
	go post(r1.url+"/v1/projects/crash/claims", tk.Secret, "k1", body)
	eventually(t, 10*time.Second, "the claim to record its key", func() bool {
		return count(`SELECT count(*) FROM idempotency_keys WHERE key = 'k1'`) == 1
	})
	r1.kill(t)

	r2 := startReplica(t, dbURL)
	agent, err := client.New(r2.url, tk.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CreateItem(ctx, "crash", client.CreateItemRequest{Title: "work"}); err != nil {
		t.Fatal(err)
	}
	var status int
	var answer string
	start := time.Now()
	for time.Since(start) < 15*time.Second {
		status, answer = post(r2.url+"/v1/projects/crash/claims", tk.Secret, "k1", body)
		if status != http.StatusConflict || !strings.Contains(answer, `"request_in_progress"`) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status != http.StatusCreated {
		t.Fatalf("retry after the crash: %d %s (after %s)\n%s", status, answer, time.Since(start).Round(time.Millisecond), r2.logs)
	}
	t.Logf("the retry ran %s after the restart", time.Since(start).Round(time.Millisecond))
	if n := count(`SELECT count(*) FROM leases`); n != 1 {
		t.Fatalf("%d leases, want 1", n)
	}
	again, replay := post(r2.url+"/v1/projects/crash/claims", tk.Secret, "k1", body)
	if again != http.StatusCreated || replay != answer {
		t.Fatalf("second retry: %d %s, want the first answer replayed", again, replay)
	}
}

// TestWorkerRidesOutReplicaKill: a worker using the Go client keeps its
// lease through a kill -9 of the replica it talks to: its heartbeat and
// its completion, sent while the replica is down, are retried (transport
// errors) and succeed once the replica is back on its address.
func TestWorkerRidesOutReplicaKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	r1 := startReplica(t, dbURL)
	admin, err := client.New(r1.url, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "crash"); err != nil {
		t.Fatal(err)
	}
	tk, err := admin.CreateToken(ctx, "crash", client.CreateTokenRequest{Name: "bot", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	failures := &transportFailures{}
	agent, err := client.New(r1.url, tk.Secret, client.WithHTTPClient(&http.Client{Transport: failures}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CreateItem(ctx, "crash", client.CreateItemRequest{Title: "work"}); err != nil {
		t.Fatal(err)
	}
	cl, err := agent.Claim(ctx, "crash", client.ClaimRequest{Worker: "w1", LeaseSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(r1.url, "http://")

	// down kills the replica, runs call while it is down, restarts the
	// replica on the same address once call has failed to connect four times,
	// and returns call's error.
	cur := r1
	down := func(call func() error) error {
		cur.kill(t)
		before := failures.n.Load()
		done := make(chan error, 1)
		go func() { done <- call() }()
		for failures.n.Load() < before+4 {
			select {
			case err := <-done:
				return err
			case <-time.After(10 * time.Millisecond):
			}
		}
		cur = startReplicaAt(t, dbURL, addr)
		return <-done
	}
	if err := down(func() error {
		_, err := agent.Heartbeat(ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch})
		return err
	}); err != nil {
		t.Fatalf("heartbeat through a replica kill: %v", err)
	}
	if err := down(func() error {
		_, err := agent.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: []byte(`1`)})
		return err
	}); err != nil {
		t.Fatalf("completion through a replica kill: %v", err)
	}
	it, err := agent.GetItem(ctx, "crash", cl.Item.ID)
	if err != nil || it.State != "done" {
		t.Fatalf("item after the completion: %+v, %v", it, err)
	}
}
