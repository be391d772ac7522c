package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Workload 7: server footprint. The server binary is built (go build
// ./cmd/workgraph) and run as its own process (`workgraph serve`) against
// the same database; workload 2's lifecycle runs against it while its
// VmRSS is sampled from /proc/<pid>/status. With -server-process=false (and
// in smoke mode) the in-process server is used and the benchmark's own RSS
// is sampled, which includes the simulated agents.

func init() {
	register(workload{id: 7, name: "server footprint (RSS under workload 2)", run: runW7})
}

func runW7(ctx context.Context, e *env) error {
	var (
		s    *benchServer
		pid  int
		name string
	)
	if e.cfg.ServerProcess {
		var err error
		if s, err = startServerProcess(ctx, e); err != nil {
			return err
		}
		defer s.stop()
		pid, name = s.pid, "rest (server process)"
		if e.cpu != nil {
			e.cpu.server.Store(int64(s.pid))
			defer e.cpu.server.Store(0)
		}
	} else {
		var err error
		if s, err = e.inProcessServer(ctx); err != nil {
			return err
		}
		pid, name = os.Getpid(), "rest (in-process, RSS incl. agents)"
	}
	for _, n := range footprintAgents(e.cfg) {
		idle, _ := readRSS(pid)
		sm := startSampler(pid)
		t0, cpu0, self0 := time.Now(), cpuSeconds(pid), cpuSeconds(os.Getpid())
		r, err := restLifecycle(ctx, e, s, 7, n)
		wall := time.Since(t0).Seconds()
		cpu, self := cpuSeconds(pid)-cpu0, cpuSeconds(os.Getpid())-self0
		peak, mean, hwm := sm.stop()
		if err != nil {
			return err
		}
		if e.cfg.ServerProcess && wall > 0 {
			// CPU in cores (1.0 = one core busy) over the whole run,
			// warm-up included: the server process, and the benchmark
			// process (the agents' HTTP clients and JSON).
			r.Extra["server_cpu_cores"] = round(cpu/wall, 2)
			r.Extra["agents_cpu_cores"] = round(self/wall, 2)
		}
		r.Name = name
		r.Extra["rss_idle_mb"] = mb(idle.rss)
		r.Extra["rss_peak_mb"] = mb(peak)
		r.Extra["rss_mean_mb"] = mb(mean)
		r.Extra["vmhwm_mb"] = mb(hwm)
		e.add(r)
		e.logf("  agents=%-3d RSS idle=%.1f MB peak=%.1f MB mean=%.1f MB (high-water %.1f MB)",
			n, mb(idle.rss), mb(peak), mb(mean), mb(hwm))
	}
	return nil
}

// footprintAgents are workload 7's agent counts: the run's Agents, then
// its FootprintAgents not among them.
func footprintAgents(cfg Config) []int {
	out := append([]int(nil), cfg.Agents...)
	for _, n := range cfg.FootprintAgents {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func mb(kb int64) float64 { return round(float64(kb)/1024, 1) }

type procMem struct{ rss, hwm int64 } // kB

// readRSS reads VmRSS and VmHWM of pid.
func readRSS(pid int) (procMem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	defer f.Close()
	var m procMem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			prefix string
			dst    *int64
		}{{"VmRSS:", &m.rss}, {"VmHWM:", &m.hwm}} {
			if strings.HasPrefix(line, k.prefix) {
				fields := strings.Fields(line[len(k.prefix):])
				if len(fields) > 0 {
					*k.dst, _ = strconv.ParseInt(fields[0], 10, 64)
				}
			}
		}
	}
	return m, sc.Err()
}

// sampler reads a process's RSS every 50 ms.
type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak int64
	sum  int64
	n    int64
	hwm  int64
}

func startSampler(pid int) *sampler {
	s := &sampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := readRSS(pid); err == nil {
				s.mu.Lock()
				if m.rss > s.peak {
					s.peak = m.rss
				}
				s.sum += m.rss
				s.n++
				s.hwm = m.hwm
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop returns the peak and mean RSS sampled and the last VmHWM, in kB.
func (s *sampler) stop() (peak, mean, hwm int64) {
	close(s.done)
	s.wg.Wait()
	if s.n > 0 {
		mean = s.sum / s.n
	}
	return s.peak, mean, s.hwm
}

// startServerProcess builds cmd/workgraph and runs `workgraph serve`
// against the run's database, with the same pool size as the direct runs.
func startServerProcess(ctx context.Context, e *env) (*benchServer, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "workgraph-bench-bin")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "workgraph")
	e.logf("  building %s", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/workgraph")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build ./cmd/workgraph: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logPath := filepath.Join(os.TempDir(), "workgraph-bench-server-process.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tok := randomToken()
	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Env = append(os.Environ(),
		"WORKGRAPH_DATABASE_URL="+withPoolSize(e.url, e.cfg.Pool),
		"WORKGRAPH_BOOTSTRAP_TOKEN="+tok,
		// Measure capacity, not the rate-limit policy.
		"WORKGRAPH_RATE_LIMIT=-1",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		os.RemoveAll(dir)
	}
	base := "http://" + addr
	if err := waitHealthy(ctx, base, exited); err != nil {
		stop()
		return nil, fmt.Errorf("server process (log %s): %w", logPath, err)
	}
	s, err := newBenchServer(base, tok)
	if err != nil {
		stop()
		return nil, err
	}
	s.pid, s.stop = cmd.Process.Pid, stop
	e.logf("  server process pid %d at %s (log %s)", s.pid, base, logPath)
	return s, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the benchmark from inside the workgraph module")
	}
	return filepath.Dir(mod), nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHealthy(ctx context.Context, base string, exited <-chan error) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("not ready after 90 s")
}

// heapSampler tracks the Go heap of this process (for workload 8).
type heapSampler struct {
	done     chan struct{}
	wg       sync.WaitGroup
	base     uint64
	peak     uint64
	startTot uint64
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapSampler{done: make(chan struct{}), base: ms.HeapAlloc, peak: ms.HeapAlloc, startTot: ms.TotalAlloc}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > h.peak {
				h.peak = ms.HeapAlloc
			}
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// stop returns the peak heap above the starting heap and the bytes
// allocated meanwhile.
func (h *heapSampler) stop() (peakAbove, allocated uint64) {
	close(h.done)
	h.wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > h.peak {
		h.peak = ms.HeapAlloc
	}
	return h.peak - h.base, ms.TotalAlloc - h.startTot
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux platform Go supports).
const clockTicks = 100

// cpuSeconds returns the user+system CPU time of pid, or 0.
func cpuSeconds(pid int) float64 {
	st, err := readStat(pid)
	if err != nil {
		return 0
	}
	return st.cpu
}
