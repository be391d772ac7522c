package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is a run's parameters (recorded in latest.json).
type Config struct {
	DatabaseURL string   `json:"-"`
	Duration    Duration `json:"duration"`
	Warmup      Duration `json:"warmup"`
	Workloads   []int    `json:"workloads"`
	// Agents are the concurrency levels of workloads 1, 2 and 7.
	Agents []int `json:"agents"`
	// FootprintAgents are workload 7's further concurrency levels, run
	// after Agents: the server's footprint with many agents (issue 15's
	// RSS target is judged at 256).
	FootprintAgents []int `json:"footprint_agents,omitempty"`
	// Sizes are workload 4's project sizes.
	Sizes []int `json:"sizes"`
	// FanOut are workload 5's dependent counts; FanOutFiller the done items
	// added to show the cost does not depend on project size.
	FanOut       []int `json:"fan_out"`
	FanOutFiller int   `json:"fan_out_filler"`
	// ContendedAgents and Backlog are workload 3's.
	ContendedAgents int `json:"contended_agents"`
	Backlog         int `json:"backlog"`
	// Leases is workload 6's number of live leases.
	Leases int `json:"leases"`
	// PlanItems is workload 8's plan size.
	PlanItems int `json:"plan_items"`
	// History are workload 9's numbers of ended leases (besides a project
	// with none).
	History []int `json:"history"`
	// Pool is the connection pool size of direct runs and of the server.
	Pool int `json:"pool"`
	// CoordClaims and CoordClaimers are workload 22's race; CoordAbandoned,
	// CoordLease and CoordSweep workload 23's abandoned items, their lease
	// and the sweeper's interval; CoordReady and CoordLive workload 24's
	// ready items and live leases.
	CoordClaims    int      `json:"coord_claims"`
	CoordClaimers  int      `json:"coord_claimers"`
	CoordAbandoned int      `json:"coord_abandoned"`
	CoordLease     Duration `json:"coord_lease"`
	CoordSweep     Duration `json:"coord_sweep"`
	CoordReady     int      `json:"coord_ready"`
	CoordLive      int      `json:"coord_live"`
	// BatchJobs is the number of jobs (items) workloads 12 (River) and 13
	// (workgraph's batched REST path) each work through.
	BatchJobs int `json:"batch_jobs"`
	// ItemBody is the size in bytes of the generated body of every item
	// the loaders write (0: none, the default).
	ItemBody int `json:"item_body,omitempty"`
	// ServerProcess runs workload 7 against a separately built binary.
	ServerProcess bool   `json:"server_process"`
	Smoke         bool   `json:"smoke"`
	Out           string `json:"-"`
	Keep          bool   `json:"-"`
	// Embedded skips the server at 127.0.0.1:5432 and uses an embedded
	// cluster (when no database URL is given).
	Embedded bool `json:"-"`
	// Render, if set, names a results JSON to draw the chart and tables
	// of again, without measuring.
	Render string `json:"-"`
	// CPUProfile, if set, is where a CPU profile of the whole benchmark
	// process (agents and in-process server) is written.
	CPUProfile string `json:"-"`
	// Statements reports, after each workload, the statements that took
	// most of PostgreSQL's time (pg_stat_statements).
	Statements bool `json:"statements,omitempty"`
	// PgBouncer adds to workload 2 the REST lifecycle through a PgBouncer
	// in transaction mode that the bench starts (variant rest-pgbouncer).
	PgBouncer bool `json:"pgbouncer,omitempty"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

// MarshalJSON writes the duration as "10s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

func defaultConfig() Config {
	return Config{
		Duration:        Duration(10 * time.Second),
		Warmup:          Duration(2 * time.Second),
		Workloads:       workloadIDs(),
		Agents:          []int{1, 16, 64},
		FootprintAgents: []int{256},
		Sizes:           []int{1_000, 100_000, 1_000_000},
		FanOut:          []int{10, 10_000},
		FanOutFiller:    100_000,
		ContendedAgents: 64,
		Backlog:         100_000,
		Leases:          1_000,
		PlanItems:       10_000,
		History:         []int{1_000_000},
		Pool:            16,
		CoordClaims:     1_000_000,
		CoordClaimers:   64,
		CoordAbandoned:  200,
		CoordLease:      Duration(2 * time.Second),
		CoordSweep:      Duration(time.Second),
		CoordReady:      100_000,
		CoordLive:       1_000,
		BatchJobs:       50_000,
		ServerProcess:   true,
		Out:             "bench/results/latest.json",
	}
}

// smokeConfig is a run of a few seconds that exercises every workload.
func smokeConfig() Config {
	c := defaultConfig()
	c.Duration = Duration(200 * time.Millisecond)
	c.Warmup = Duration(50 * time.Millisecond)
	c.Agents = []int{2}
	c.FootprintAgents = nil
	c.Sizes = []int{50, 500}
	c.FanOut = []int{10, 50}
	c.FanOutFiller = 500
	c.ContendedAgents = 4
	c.Backlog = 500
	c.Leases = 24
	c.PlanItems = 100
	c.History = []int{2_000}
	c.Pool = 4
	c.BatchJobs = 600
	c.ServerProcess = false
	c.Smoke = true
	c.Out = ""
	return c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if cfg.Render != "" {
		if err := render(cfg.Render); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if _, err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (Config, error) {
	// -smoke picks the defaults the other flags then override.
	cfg := defaultConfig()
	for _, a := range args {
		if a == "-smoke" || a == "--smoke" || a == "-smoke=true" || a == "--smoke=true" {
			cfg = smokeConfig()
		}
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", cfg.Smoke, "a run of a few seconds with tiny sizes (for CI); other flags override its settings")
	dur := fs.Duration("duration", time.Duration(cfg.Duration), "measured time of each run")
	warm := fs.Duration("warmup", time.Duration(cfg.Warmup), "warm-up before each measured run")
	workloads := fs.String("workloads", joinInts(cfg.Workloads), "comma-separated workloads to run (1-13, 15, 22-24)")
	agents := fs.String("agents", joinInts(cfg.Agents), "agent counts of workloads 1, 2 and 7")
	footprint := fs.String("footprint-agents", joinInts(cfg.FootprintAgents), "further agent counts of workload 7 only (the server's footprint; empty: none)")
	sizes := fs.String("sizes", joinInts(cfg.Sizes), "project sizes (items) of workload 4")
	fanOut := fs.String("fanout", joinInts(cfg.FanOut), "dependent counts of workload 5")
	history := fs.String("history", joinInts(cfg.History), "ended leases in workload 9's projects (besides one with none), e.g. 1000000,10000000")
	fs.IntVar(&cfg.FanOutFiller, "fanout-filler", cfg.FanOutFiller, "done items added to workload 5's project for the size comparison")
	fs.IntVar(&cfg.ContendedAgents, "contended-agents", cfg.ContendedAgents, "agents of workload 3")
	fs.IntVar(&cfg.Backlog, "backlog", cfg.Backlog, "ready backlog of workload 3")
	fs.IntVar(&cfg.Leases, "leases", cfg.Leases, "live leases of workload 6")
	fs.IntVar(&cfg.PlanItems, "plan-items", cfg.PlanItems, "items in workload 8's plan")
	fs.IntVar(&cfg.Pool, "pool", cfg.Pool, "database pool size of direct runs and of the server")
	fs.IntVar(&cfg.CoordClaims, "coord-claims", cfg.CoordClaims, "claims of workload 22's race (smoke: 500)")
	fs.IntVar(&cfg.CoordClaimers, "coord-claimers", cfg.CoordClaimers, "claimers of workload 22's race")
	fs.IntVar(&cfg.CoordAbandoned, "coord-abandoned", cfg.CoordAbandoned, "abandoned items of workload 23")
	coordLease := fs.Duration("coord-lease", time.Duration(cfg.CoordLease), "lease of workload 23's abandoned items")
	coordSweep := fs.Duration("coord-sweep", time.Duration(cfg.CoordSweep), "sweeper interval of workload 23")
	fs.IntVar(&cfg.CoordReady, "coord-ready", cfg.CoordReady, "ready items of workload 24")
	fs.IntVar(&cfg.CoordLive, "coord-live", cfg.CoordLive, "live leases of workload 24")
	fs.IntVar(&cfg.BatchJobs, "batch-jobs", cfg.BatchJobs, "jobs River works through in workload 12, items workgraph works through in workload 13")
	fs.IntVar(&cfg.ItemBody, "item-body", cfg.ItemBody, "bytes of generated prose in the body of every item the loaders write (0: none)")
	fs.BoolVar(&cfg.ServerProcess, "server-process", cfg.ServerProcess, "workload 7: build and run the server as a separate process")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "results JSON path (the SVG chart is written beside it); empty: none")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the fresh benchmark database")
	fs.BoolVar(&cfg.Embedded, "embedded", false, "with no database URL, use an embedded cluster even if 127.0.0.1:5432 answers")
	fs.StringVar(&cfg.Render, "render", "", "only redraw the SVG chart and Markdown tables of this results JSON")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the benchmark process (agents and in-process server) to this file")
	fs.BoolVar(&cfg.Statements, "statements", false,
		"after each workload, list the statements that took most of PostgreSQL's time (pg_stat_statements; with no database URL, an embedded cluster that loads it)")
	fs.BoolVar(&cfg.PgBouncer, "pgbouncer", cfg.PgBouncer,
		"workload 2: also run the REST lifecycle through a PgBouncer in transaction mode started by the bench (Debian's pgbouncer, on a unix socket of its own), beside the direct one")
	fs.StringVar(&cfg.DatabaseURL, "database-url", os.Getenv("WORKGRAPH_BENCH_DATABASE_URL"),
		"PostgreSQL URL (env WORKGRAPH_BENCH_DATABASE_URL); empty: a fresh database on 127.0.0.1:5432, else an embedded cluster")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Smoke = *smoke
	cfg.CoordLease, cfg.CoordSweep = Duration(*coordLease), Duration(*coordSweep)
	cfg.Duration, cfg.Warmup = Duration(*dur), Duration(*warm)
	var err error
	for _, p := range []struct {
		dst *[]int
		s   string
		f   string
	}{{&cfg.Workloads, *workloads, "workloads"}, {&cfg.Agents, *agents, "agents"}, {&cfg.Sizes, *sizes, "sizes"}, {&cfg.FanOut, *fanOut, "fanout"}, {&cfg.History, *history, "history"}} {
		if *p.dst, err = parseInts(p.s); err != nil {
			return cfg, fmt.Errorf("-%s: %w", p.f, err)
		}
	}
	cfg.FootprintAgents = nil
	if strings.TrimSpace(*footprint) != "" {
		if cfg.FootprintAgents, err = parseInts(*footprint); err != nil {
			return cfg, fmt.Errorf("-footprint-agents: %w", err)
		}
	}
	for _, w := range cfg.Workloads {
		if workloadByID(w) == nil {
			return cfg, fmt.Errorf("-workloads: no workload %d", w)
		}
	}
	if cfg.Pool < 1 {
		return cfg, errors.New("-pool must be at least 1")
	}
	return cfg, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// env is what workloads share within one run.
type env struct {
	cfg    Config
	url    string
	pool   *pgxpool.Pool
	log    io.Writer
	rep    *Report
	closer []func()
	// srv is the in-process server, started on first use.
	srv *benchServer
	// pooledSrv is the in-process server behind PgBouncer (-pgbouncer);
	// pooledSkipped records that pgbouncer was not found.
	pooledSrv     *benchServer
	pooledSkipped bool
	// cpu reads the CPU of measured windows; nil when the cluster's
	// processes cannot be read (see cpuMeter).
	cpu *cpuMeter
}

func (e *env) add(r Result) { e.rep.Results = append(e.rep.Results, r) }

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (e *env) duration() time.Duration { return time.Duration(e.cfg.Duration) }
func (e *env) warmup() time.Duration   { return time.Duration(e.cfg.Warmup) }

// projectSeq numbers the projects of a run; runID tells runs on the same
// database apart.
var (
	projectSeq int
	runID      = strconv.FormatInt(time.Now().Unix(), 36)
)

// newProjectName names a project for one measurement.
func (e *env) newProjectName(prefix string) string {
	projectSeq++
	return fmt.Sprintf("bench-%s-%s-%d", runID, prefix, projectSeq)
}

// run executes the configured workloads and writes the report.
func run(ctx context.Context, cfg Config, stdout, log io.Writer) (*Report, error) {
	rep := &Report{
		StartedAt: time.Now().UTC(),
		Command:   strings.Join(append([]string{"go run ./bench"}, os.Args[1:]...), " "),
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:      runtime.NumCPU(),
		Config:    cfg,
	}
	if cfg.ItemBody > 0 {
		itemBody = proseBody(cfg.ItemBody)
	}
	d, err := openDatabase(ctx, cfg.DatabaseURL, cfg.Embedded, cfg.Keep, cfg.Statements, log)
	if err != nil {
		return nil, err
	}
	defer d.close()
	pool, err := openPool(ctx, d.url, cfg.Pool)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	rep.Postgres = postgresInfo(ctx, pool, d.source)
	if cfg.Statements {
		if err := prepareStatements(ctx, pool); err != nil {
			return nil, err
		}
	}
	if l := loadAvg(); l != "" {
		rep.LoadAvg = append(rep.LoadAvg, l)
	}
	e := &env{cfg: cfg, url: d.url, pool: pool, log: log, rep: rep}
	if m, err := newCPUMeter(ctx, e); err != nil {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("CPU per 1,000 operations: %v", err))
	} else {
		e.cpu = m
	}
	defer func() {
		for i := len(e.closer) - 1; i >= 0; i-- {
			e.closer[i]()
		}
	}()
	ids := append([]int(nil), cfg.Workloads...)
	sort.Ints(ids)
	for _, id := range ids {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		w := workloadByID(id)
		e.logf("workload %d: %s", id, w.name)
		if cfg.Statements {
			if err := resetStatements(ctx, pool); err != nil {
				return nil, err
			}
		}
		t := time.Now()
		if err := w.run(ctx, e); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			msg := fmt.Sprintf("workload %d (%s): %v", id, w.name, err)
			e.logf("  FAILED: %v", err)
			rep.Skipped = append(rep.Skipped, msg)
			continue
		}
		e.logf("  done in %s", time.Since(t).Round(time.Millisecond))
		if cfg.Statements {
			top, err := topStatements(ctx, pool, topStatementCount)
			if err != nil {
				return nil, err
			}
			if len(top) > 0 { // workload 2 runs within workload 1 when both are selected
				ws := WorkloadStatements{Workload: id, Top: top}
				printStatements(log, ws)
				rep.Statements = append(rep.Statements, ws)
			}
		}
	}
	sort.SliceStable(rep.Results, func(i, j int) bool { return rep.Results[i].Workload < rep.Results[j].Workload })
	rep.Targets = targets(rep)
	rep.FinishedAt = time.Now().UTC()
	if l := loadAvg(); l != "" {
		rep.LoadAvg = append(rep.LoadAvg, l)
	}
	fmt.Fprintln(stdout)
	printTable(stdout, rep)
	if cfg.Out != "" {
		if err := writeJSON(cfg.Out, rep); err != nil {
			return rep, err
		}
		if err := writeViews(cfg.Out, rep); err != nil {
			return rep, err
		}
		base := strings.TrimSuffix(cfg.Out, ".json")
		fmt.Fprintf(stdout, "\nwrote %s, %s.svg and %s.md\n", cfg.Out, base, base)
	}
	return rep, nil
}

// workload is one of issue 7's workloads.
type workload struct {
	id   int
	name string
	run  func(ctx context.Context, e *env) error
}

// workloads is the registry; each workload's file registers itself.
var workloads []workload

func register(w workload) { workloads = append(workloads, w) }

func workloadByID(id int) *workload {
	for i := range workloads {
		if workloads[i].id == id {
			return &workloads[i]
		}
	}
	return nil
}

func workloadIDs() []int {
	ids := make([]int, 0, len(workloads))
	for _, w := range workloads {
		ids = append(ids, w.id)
	}
	sort.Ints(ids)
	return ids
}

// writeViews writes the SVG chart and the Markdown tables beside the
// results JSON at path.
func writeViews(path string, rep *Report) error {
	base := strings.TrimSuffix(path, ".json")
	if err := writeSVG(base+".svg", rep); err != nil {
		return err
	}
	return writeMarkdown(base+".md", rep)
}

// render redraws the chart and tables of a results JSON.
func render(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeViews(path, &rep)
}
