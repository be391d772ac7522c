package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The CPU of a measured window: utime+stime from /proc/<pid>/stat of the
// benchmark process (agents, and the in-process server), of the server
// process when workload 7 runs one, and of every process of the database
// cluster (its postmaster and the postmaster's children: backends and
// background workers), read when the window opens and when it closes.
// Each result then carries the CPU seconds per 1,000 of its operations
// (lifecycles in workloads 1, 2 and 7):
//
//   - cpu_per_1k_bench_s: the benchmark process;
//   - cpu_per_1k_server_s: the server process (workload 7's separate one),
//     else absent;
//   - cpu_per_1k_pg_s: the cluster's processes.
//
// The same windows read the cluster's WAL insert position, and each result
// also carries the WAL written per operation, wal_bytes_per_op (the
// position moves with every record inserted, at once; pg_stat_wal's
// counters, which also count full-page images, reach the view only when a
// backend reports them, up to seconds later, too late for a window). It
// counts all of the cluster's writes in the window, as the CPU counts all
// of its processes: on a server that others use it is an upper bound.
//
// A backend that exits inside the window takes its CPU with it (a pool
// keeps its connections open across a run, so few do). The cluster must
// run on this machine, and its processes must be readable: else there is
// no meter and the results carry no CPU figures.
type cpuMeter struct {
	postmaster int
	// pool reads the WAL insert position; nil: no WAL figures.
	pool *pgxpool.Pool
	// server is the pid of a separate server process, 0 when none.
	server atomic.Int64
}

// newCPUMeter finds the cluster's postmaster as the parent of one of the
// pool's backends.
func newCPUMeter(ctx context.Context, e *env) (*cpuMeter, error) {
	var backend int
	if err := e.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return nil, err
	}
	st, err := readStat(backend)
	if err != nil {
		return nil, fmt.Errorf("the database's backend %d is not a process of this machine: %w", backend, err)
	}
	pm, err := readStat(st.ppid)
	if err != nil || pm.comm != "postgres" {
		return nil, fmt.Errorf("the parent of backend %d (pid %d) is not a readable postgres process", backend, st.ppid)
	}
	m := &cpuMeter{postmaster: st.ppid, pool: e.pool}
	if _, ok := m.wal(); !ok {
		m.pool = nil // a standby, or the function not allowed to this role
	}
	return m, nil
}

// cpuSample is the CPU seconds used so far by the benchmark process, the
// server process, and each process of the cluster (by pid).
type cpuSample struct {
	bench, server float64
	pg            map[int]float64
	// wal is the cluster's WAL insert position in bytes; hasWAL says it
	// was read.
	wal    float64
	hasWAL bool
}

// wal reads the cluster's WAL insert position, in bytes from the start.
func (m *cpuMeter) wal() (pos float64, ok bool) {
	if m.pool == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8").Scan(&pos); err != nil {
		return 0, false
	}
	return pos, true
}

func (m *cpuMeter) sample() cpuSample {
	s := cpuSample{bench: cpuSeconds(os.Getpid()), pg: map[int]float64{}}
	s.wal, s.hasWAL = m.wal()
	if pid := int(m.server.Load()); pid != 0 {
		s.server = cpuSeconds(pid)
	}
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && (pid == m.postmaster || st.ppid == m.postmaster) {
			s.pg[pid] = st.cpu
		}
	}
	return s
}

// addTo adds the CPU used since before to rec's extras (summed over the
// rounds of an interleaved run, then divided by fromRecorder).
func (s cpuSample) addTo(rec *recorder, before cpuSample) {
	var pg float64
	for pid, v := range s.pg {
		pg += v - before.pg[pid] // a process started in the window counts from 0
	}
	rec.extra[cpuBenchKey] += s.bench - before.bench
	rec.extra[cpuPGKey] += pg
	if s.server > 0 {
		rec.extra[cpuServerKey] += s.server - before.server
	}
	if s.hasWAL && before.hasWAL {
		rec.extra[walBytesKey] += s.wal - before.wal
	}
}

// The recorder's sums of CPU seconds, turned into per-1,000-operation
// figures by perThousandOps.
const (
	cpuBenchKey  = "cpu_bench_s"
	cpuServerKey = "cpu_server_s"
	cpuPGKey     = "cpu_pg_s"
	walBytesKey  = "wal_bytes"
)

// perThousandOps replaces r's CPU sums by CPU seconds per 1,000 of its
// operations, and its WAL sums by the WAL per operation.
func perThousandOps(r *Result) {
	if v, ok := r.Extra[walBytesKey]; ok {
		delete(r.Extra, walBytesKey)
		if r.Ops > 0 {
			r.Extra[walBytesKey+"_per_op"] = round(v/float64(r.Ops), 0)
		}
	}
	for _, k := range []string{cpuBenchKey, cpuServerKey, cpuPGKey} {
		v, ok := r.Extra[k]
		if !ok {
			continue
		}
		delete(r.Extra, k)
		if r.Ops > 0 {
			r.Extra["cpu_per_1k_"+strings.TrimPrefix(k, "cpu_")] = round(v/(float64(r.Ops)/1000), 3)
		}
	}
}

type procStat struct {
	comm string
	ppid int
	cpu  float64 // utime+stime, seconds
}

// readStat reads a process's name, parent and CPU from /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2, in parentheses) may hold spaces; the
	// fields after its closing parenthesis are fixed: the parent is the
	// 2nd, utime and stime the 12th and 13th.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return procStat{comm: s[open+1 : end], ppid: ppid, cpu: (ut + st) / clockTicks}, nil
}

// cpuWindow is the CPU of one unrepeated measured stretch (workloads 12
// and 13, which run once until their jobs are done): start it when the
// stretch opens, stop it when it closes, and add its figures per 1,000
// operations to the result. A nil meter measures nothing.
type cpuWindow struct {
	m             *cpuMeter
	before, after cpuSample
}

func (m *cpuMeter) window() cpuWindow {
	if m == nil {
		return cpuWindow{}
	}
	return cpuWindow{m: m, before: m.sample()}
}

// stop closes the window.
func (w *cpuWindow) stop() {
	if w.m != nil {
		w.after = w.m.sample()
	}
}

// addTo adds cpu_per_1k_bench_s and cpu_per_1k_pg_s (and
// cpu_per_1k_server_s with a separate server) of the stopped window to r,
// whose Ops must be set.
func (w cpuWindow) addTo(r *Result) {
	if w.m == nil || w.after.pg == nil || r.Ops <= 0 {
		return
	}
	rec := &recorder{extra: map[string]float64{}}
	w.after.addTo(rec, w.before)
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	for k, v := range rec.extra {
		r.Extra[k] = v
	}
	perThousandOps(r)
}
