//go:build linux

package counter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/examples/counter"
	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/internal/testbin"
	"github.com/workgraph-dev/workgraph/server"
)

// The seven cases of seed 002 (docs/agents.md, "Fencing your effects"),
// each with
//   - a real workgraph server (in-process, port 0, its own database, the
//     lease clock a stub the test moves past the old lease's expiry);
//   - a separate destination database behind the counter service;
//   - worker A, a real process (internal/oldworker) that claims JOB-1,
//     stops itself (SIGSTOP) before it calls the destination, and is
//     resumed (SIGCONT) when the case says; worker B is this test, which
//     reclaims JOB-1 at epoch 2 once A's lease has expired.
// Each asserts the destination's final units and receipts, A's refused
// completion (lease_lost), and workgraph's history: two claims, B's the
// last, at epoch 2.

var (
	oldWorkerOnce sync.Once
	oldWorkerBin  string
	oldWorkerErr  error
)

// oldWorker builds the old worker's binary once per test binary.
func oldWorker(t *testing.T) string {
	t.Helper()
	oldWorkerOnce.Do(func() {
		oldWorkerBin, oldWorkerErr = testbin.Build("github.com/workgraph-dev/workgraph/examples/counter/internal/oldworker")
	})
	if oldWorkerErr != nil {
		t.Fatal(oldWorkerErr)
	}
	return oldWorkerBin
}

const (
	seedAdmin = "seed-002-admin-token"
	seedUnits = 4
	ttl       = 5 * time.Second
)

// seedRun is one case's world.
type seedRun struct {
	t       *testing.T
	ctx     context.Context
	stub    *clock.Stub
	srv     *server.Server
	admin   *client.Client
	b       *client.Client
	aToken  string
	project *client.Project
	job     *client.Item
	svc     *counter.Service
	dest    string
	destURL string // the destination's database
	// failNext makes the destination's next fenced addition fail after
	// its effect (the rollback case); failedView is what that failing
	// transaction saw of the mark.
	failNext    atomic.Bool
	failedView  fence.Mark
	failedUnits int64

	a    *exec.Cmd
	aOut *bufio.Scanner
}

// setupSeed is newSeedRun with worker A started in mode against the
// in-process destination.
func setupSeed(t *testing.T, mode string) *seedRun {
	t.Helper()
	r := newSeedRun(t)
	r.startA(mode, r.dest)
	return r
}

// newSeedRun starts the server, creates JOB-1 and the destination.
func newSeedRun(t *testing.T) *seedRun {
	t.Helper()
	r := &seedRun{t: t, ctx: context.Background(), stub: clock.NewStub(time.Now())}
	var err error
	r.srv, err = server.Start(r.ctx, server.Config{
		DatabaseURL: dbtest.URL(t), Addr: "127.0.0.1:0", BootstrapToken: seedAdmin, Clock: r.stub,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1,
	})
	if err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
	})
	r.admin = r.client(seedAdmin)
	if r.project, err = r.admin.CreateProject(r.ctx, "seed"); err != nil {
		t.Fatal(err)
	}
	r.aToken = r.agentToken("worker-a")
	r.b = r.client(r.agentToken("worker-b"))
	if r.job, err = r.b.CreateItem(r.ctx, "seed", client.CreateItemRequest{Title: "JOB-1"}); err != nil {
		t.Fatal(err)
	}

	// The destination: its own database, trusting the key the server
	// publishes at the well-known URL, for this project only.
	res, err := http.Get(r.srv.URL() + fence.KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	keys, err := fence.ParseKeys(doc)
	if err != nil {
		t.Fatalf("keys at %s: %v (%s)", fence.KeysPath, err, doc)
	}
	// A new database (dbtest.FreshURL): counter.Migrate creates the
	// destination's tables, a schema a reused database must not keep.
	r.destURL = dbtest.FreshURL(t)
	destPool, err := pgxpool.New(r.ctx, r.destURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destPool.Close)
	if err := counter.Migrate(r.ctx, destPool); err != nil {
		t.Fatal(err)
	}
	if r.svc, err = counter.New(destPool, keys, r.project.ID, nil); err != nil {
		t.Fatal(err)
	}
	r.svc.AfterEffect = func(ctx context.Context, tx pgx.Tx) error {
		if !r.failNext.CompareAndSwap(true, false) {
			return nil
		}
		r.failedView, _ = r.svc.Gate().Marks(ctx, tx, r.project.ID+"/"+r.job.ID)
		tx.QueryRow(ctx, `SELECT units FROM counters WHERE name = $1`, r.job.ID).Scan(&r.failedUnits)
		return errors.New("deliberate failure before the receipt and the commit")
	}
	hs := httptest.NewServer(r.svc.Handler())
	t.Cleanup(hs.Close)
	r.dest = hs.URL
	return r
}

// startA starts worker A against the destination at dest: it claims
// JOB-1 (epoch 1) and stops itself.
func (r *seedRun) startA(mode, dest string) {
	t := r.t
	t.Helper()
	bin := oldWorker(t)
	var err error
	r.a = exec.Command(bin, "-server", r.srv.URL(), "-token", r.aToken, "-project", "seed", "-worker", "worker-a",
		"-dest", dest, "-mode", mode, "-units", fmt.Sprint(seedUnits), "-lease-seconds", fmt.Sprint(int(ttl.Seconds())))
	stdout, err := r.a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.a.Stderr = &testWriter{t: t}
	// A process group of its own: the kernel continues the stopped
	// members of a process group that becomes orphaned (as the test's
	// own group may, when other processes of it exit), which would
	// resume A before the case says.
	r.a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.a.Process.Kill() })
	r.aOut = bufio.NewScanner(stdout)
	claimed := r.report()
	if claimed.Event != "claimed" || claimed.Epoch != 1 || claimed.PID == os.Getpid() {
		t.Fatalf("worker A: %+v, want claimed at epoch 1 in a process of its own", claimed)
	}
	r.waitStopped()
}

func (r *seedRun) client(token string) *client.Client {
	c, err := client.New(r.srv.URL(), token, client.WithRetries(1))
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *seedRun) agentToken(name string) string {
	tk, err := r.admin.CreateToken(r.ctx, "seed", client.CreateTokenRequest{Name: name, Role: "agent"})
	if err != nil {
		r.t.Fatal(err)
	}
	return tk.Secret
}

// workerReport is the old worker's stdout line (internal/oldworker).
type workerReport struct {
	Event             string `json:"event"`
	PID               int    `json:"pid"`
	Lease             string `json:"lease"`
	Epoch             int64  `json:"epoch"`
	DestinationStatus int    `json:"destination_status"`
	DestinationCode   string `json:"destination_code"`
	Replayed          bool   `json:"replayed"`
	CompleteCode      string `json:"complete_code"`
}

func (r *seedRun) report() workerReport {
	r.t.Helper()
	if !r.aOut.Scan() {
		r.t.Fatalf("worker A said nothing more (%v)", r.aOut.Err())
	}
	var rep workerReport
	if err := json.Unmarshal(r.aOut.Bytes(), &rep); err != nil {
		r.t.Fatalf("worker A: %q: %v", r.aOut.Text(), err)
	}
	return rep
}

// waitStopped waits until the kernel reports worker A stopped (state T in
// /proc/<pid>/stat): it stops itself right after its "claimed" line.
func (r *seedRun) waitStopped() {
	r.t.Helper()
	stat := fmt.Sprintf("/proc/%d/stat", r.a.Process.Pid)
	for i := 0; ; i++ {
		b, err := os.ReadFile(stat)
		if err != nil {
			r.t.Fatalf("worker A: %v", err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		if i > 3000 {
			r.t.Fatalf("worker A never stopped: %s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reclaim moves the lease clock past A's expiry and has B claim JOB-1 at
// epoch 2; it checks B's fence token (and a renewed one) on the way.
func (r *seedRun) reclaim() *client.Claim {
	r.t.Helper()
	r.stub.Advance(ttl + time.Second)
	cl, err := r.b.Claim(r.ctx, "seed", client.ClaimRequest{Worker: "worker-b", LeaseSeconds: 60})
	if err != nil {
		r.t.Fatalf("B's claim: %v", err)
	}
	if cl.Item.ID != r.job.ID || cl.Lease.Epoch != 2 {
		r.t.Fatalf("B claimed %s at epoch %d, want JOB-1 at epoch 2", cl.Item.Title, cl.Lease.Epoch)
	}
	hb, err := r.b.Heartbeat(r.ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: 2})
	if err != nil {
		r.t.Fatal(err)
	}
	res, _ := http.Get(r.srv.URL() + "/v1/fence/keys")
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	keys, err := fence.ParseKeys(doc)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, tok := range []string{cl.FenceToken, hb.FenceToken} {
		c, err := fence.Verify(keys, tok)
		if err != nil || c.Lease != cl.Lease.ID || c.Item != r.job.ID || c.Project != r.project.ID || c.Epoch != 2 {
			r.t.Fatalf("B's fence token: %+v, %v", c, err)
		}
	}
	return cl
}

// resumeA continues worker A (SIGCONT) and returns its final report once
// it has exited.
func (r *seedRun) resumeA() workerReport {
	r.t.Helper()
	if err := r.a.Process.Signal(syscall.SIGCONT); err != nil {
		r.t.Fatal(err)
	}
	rep := r.report()
	if err := r.a.Wait(); err != nil {
		r.t.Fatalf("worker A exited: %v", err)
	}
	if rep.Event != "done" || rep.CompleteCode != client.CodeLeaseLost {
		r.t.Fatalf("worker A: %+v; want its completion refused with lease_lost", rep)
	}
	return rep
}

type destAnswer struct {
	status   int
	code     string
	replayed bool
}

// bAdds is B's destination call: fenced with its token (and op as the
// operation id unless ""), or unfenced.
func (r *seedRun) bAdds(cl *client.Claim, fenced bool, op string, units int) destAnswer {
	r.t.Helper()
	path := "/counters/" + r.job.ID + "/add"
	if !fenced {
		path = "/unfenced" + path
	}
	body, _ := json.Marshal(map[string]int{"units": units})
	req, _ := http.NewRequest(http.MethodPost, r.dest+path, bytes.NewReader(body))
	if fenced {
		req.Header.Set(fence.HeaderFence, cl.FenceToken)
	}
	if op != "" {
		req.Header.Set(fence.HeaderOperation, r.job.ID+"/"+op)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var p struct {
		Code string `json:"code"`
	}
	json.NewDecoder(res.Body).Decode(&p)
	return destAnswer{status: res.StatusCode, code: p.Code, replayed: res.Header.Get(fence.HeaderReplayed) == "true"}
}

// finish completes B's lease, then checks workgraph's history (two
// claims, B's the last at epoch 2 and done) and the destination's
// committed state.
func (r *seedRun) finish(cl *client.Claim, units int64, mark fence.Mark) {
	r.t.Helper()
	if _, err := r.b.Complete(r.ctx, cl.Lease.ID, client.CompleteRequest{Epoch: 2, Result: json.RawMessage(`{"by":"worker-b"}`)}); err != nil {
		r.t.Fatalf("B's completion: %v", err)
	}
	ls, err := r.admin.ItemLeases(r.ctx, "seed", r.job.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(ls) != 2 || ls[1].Worker != "worker-b" || ls[1].Epoch != 2 || ls[1].Outcome == nil || *ls[1].Outcome != "completed" {
		r.t.Fatalf("workgraph's leases of JOB-1: %+v; want two claims, the last worker-b's at epoch 2, completed", ls)
	}
	r.wantDest(units, mark)
}

func (r *seedRun) wantDest(units int64, mark fence.Mark) {
	r.t.Helper()
	c, err := r.svc.Counter(r.ctx, r.job.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := r.svc.Gate().Marks(r.ctx, r.svc.Pool(), r.project.ID+"/"+r.job.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	if c.Units != units || m != mark {
		r.t.Fatalf("destination: %d units, highest %d, %d receipts; want %d units, highest %d, %d receipts",
			c.Units, m.HighWater, m.Receipts, units, mark.HighWater, mark.Receipts)
	}
}

func wantAnswer(t *testing.T, who string, got destAnswer, status int, code string, replayed bool) {
	t.Helper()
	if got.status != status || got.code != code || got.replayed != replayed {
		t.Fatalf("%s at the destination: %+v; want %d %q replayed=%v", who, got, status, code, replayed)
	}
}

func wantA(t *testing.T, got workerReport, status int, code string, replayed bool) {
	t.Helper()
	wantAnswer(t, "worker A", destAnswer{status: got.DestinationStatus, code: got.DestinationCode, replayed: got.Replayed}, status, code, replayed)
}

func TestSeedCases(t *testing.T) {
	t.Parallel()
	const ok = http.StatusOK

	t.Run("finish-only", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "unfenced")
		cl := r.reclaim()
		wantAnswer(t, "B", r.bAdds(cl, false, "", seedUnits), ok, "", false)
		wantA(t, r.resumeA(), ok, "", false)
		r.finish(cl, 8, fence.Mark{})
	})
	t.Run("fence-new-first", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "fence")
		cl := r.reclaim()
		wantAnswer(t, "B", r.bAdds(cl, true, "", seedUnits), ok, "", false)
		wantA(t, r.resumeA(), http.StatusConflict, fence.CodeFenceStale, false)
		r.finish(cl, 4, fence.Mark{HighWater: 2})
	})
	t.Run("fence-old-first", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "fence")
		cl := r.reclaim()
		// A arrives after the reclaim, before the destination has seen 2.
		wantA(t, r.resumeA(), ok, "", false)
		r.wantDest(4, fence.Mark{HighWater: 1})
		wantAnswer(t, "B", r.bAdds(cl, true, "", seedUnits), ok, "", false)
		r.finish(cl, 8, fence.Mark{HighWater: 2})
	})
	t.Run("same-fence-repeat", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "fence")
		cl := r.reclaim()
		wantAnswer(t, "B", r.bAdds(cl, true, "", seedUnits), ok, "", false)
		wantAnswer(t, "B's repeat", r.bAdds(cl, true, "", seedUnits), ok, "", false)
		wantA(t, r.resumeA(), http.StatusConflict, fence.CodeFenceStale, false)
		r.finish(cl, 8, fence.Mark{HighWater: 2})
	})
	t.Run("fence-and-receipt", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "receipt")
		cl := r.reclaim()
		wantA(t, r.resumeA(), ok, "", false)
		wantAnswer(t, "B", r.bAdds(cl, true, "add", seedUnits), ok, "", true)
		r.wantDest(4, fence.Mark{HighWater: 2, Receipts: 1})
		wantAnswer(t, "B's repeat", r.bAdds(cl, true, "add", seedUnits), ok, "", true)
		r.finish(cl, 4, fence.Mark{HighWater: 2, Receipts: 1})
	})
	t.Run("changed-operation", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "receipt")
		cl := r.reclaim()
		wantAnswer(t, "B", r.bAdds(cl, true, "add", seedUnits), ok, "", false)
		wantAnswer(t, "B's changed retry", r.bAdds(cl, true, "add", seedUnits+1), http.StatusConflict, fence.CodeOperationConflict, false)
		wantA(t, r.resumeA(), http.StatusConflict, fence.CodeFenceStale, false)
		r.finish(cl, 4, fence.Mark{HighWater: 2, Receipts: 1})
	})
	t.Run("fence-rollback", func(t *testing.T) {
		t.Parallel()
		r := setupSeed(t, "receipt")
		cl := r.reclaim()
		r.failNext.Store(true)
		wantAnswer(t, "B (controlled failure)", r.bAdds(cl, true, "add", seedUnits), http.StatusInternalServerError, "internal", false)
		// The failing connection's own view: highest 2, four units, no
		// receipt; committed: nothing.
		if r.failedView != (fence.Mark{HighWater: 2}) || r.failedUnits != seedUnits {
			t.Fatalf("the failing transaction saw %+v and %d units; want highest 2, no receipt, %d units", r.failedView, r.failedUnits, seedUnits)
		}
		r.wantDest(0, fence.Mark{})
		// B's queue lease is untouched by the destination's rollback.
		if l, err := r.b.GetLease(r.ctx, cl.Lease.ID); err != nil || l.EndedAt != nil || l.Epoch != 2 {
			t.Fatalf("B's lease after the destination rolled back: %+v, %v; want running at epoch 2", l, err)
		}
		// A is admitted against the committed mark 0.
		wantA(t, r.resumeA(), ok, "", false)
		r.wantDest(4, fence.Mark{HighWater: 1, Receipts: 1})
		// B's matching retry replays A's receipt and raises the mark to 2.
		wantAnswer(t, "B's retry", r.bAdds(cl, true, "add", seedUnits), ok, "", true)
		r.finish(cl, 4, fence.Mark{HighWater: 2, Receipts: 1})
	})
}

// testWriter sends the old worker's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("worker A: %s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}
