package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// scenario names a set of fault kinds the nemesis draws from.
type scenario struct {
	name  string
	kinds []string
}

var fullScenarios = []scenario{
	{"replica-kill", []string{faultKill}},
	{"db-terminate", []string{faultTerminate}},
	{"pg-restart", []string{faultPGRestart}},
	{"link", []string{faultDelay, faultStall, faultCut}},
	{"pause", []string{faultPause}},
	{"mixed", faultKinds},
}

type config struct {
	seed       uint64
	duration   time.Duration // the fault phase of each scenario
	drain      time.Duration // bound on "every item finished" after the faults stop
	readyBound time.Duration
	workers    int
	ttl        int
	scenarios  []scenario
	bin        string
	out        string
	keep       bool
	pgPort     int
	proxyPort  int
	httpPort   int
}

// The suite's port ranges: PostgreSQL and the proxy in pairs from 55440,
// the replicas in triples from 18440, so that runs side by side do not
// collide.
const (
	pgPortFirst    = 55440
	httpPortFirst  = 18440
	bootstrapToken = "wg_chaos_bootstrap_secret_0123456789"
)

// freePorts returns the first slot whose ports all accept a listener now.
func freePorts() (pg, web int, err error) {
	for slot := 0; slot < 3; slot++ {
		pg, web = pgPortFirst+2*slot, httpPortFirst+3*slot
		if portsFree(pg, pg+1, web, web+1, web+2) {
			return pg, web, nil
		}
	}
	return 0, 0, fmt.Errorf("no free ports in 55440-55449 and 18440-18449: is another chaos run going?")
}

func portsFree(ports ...int) bool {
	for _, p := range ports {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// suite is the running fixture: the cluster, the proxy, the replicas.
type suite struct {
	cfg      config
	root     string
	cluster  *pgCluster
	proxy    *linkProxy
	replicas []*replica
	obs      *observer
	caller   *caller
	logMu    sync.Mutex
}

func (s *suite) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(os.Stderr, "chaos %s: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func main() { os.Exit(run()) }

func run() (code int) {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The whole run stops by itself, whatever happens.
	budget := time.Duration(len(cfg.scenarios))*(cfg.duration+cfg.drain+90*time.Second) + 3*time.Minute
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	s := &suite{cfg: cfg}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "chaos: panic: %v\n%s", p, debug.Stack())
			code = 2
		}
		s.close()
	}()
	if err := s.setUp(ctx); err != nil {
		s.logf("setting up: %v", err)
		return 2
	}
	var rows []row
	for i, sc := range cfg.scenarios {
		r, err := s.runScenario(ctx, sc, cfg.seed+uint64(i))
		if err != nil {
			s.logf("scenario %s: %v", sc.name, err)
			return 2
		}
		rows = append(rows, r)
	}
	report := renderReport(cfg, rows)
	fmt.Print(report)
	if cfg.out != "" {
		os.MkdirAll(filepath.Dir(cfg.out), 0o755)
		if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
			s.logf("writing %s: %v", cfg.out, err)
		} else {
			s.logf("report written to %s", cfg.out)
		}
	}
	for _, r := range rows {
		if !r.result.OK() {
			return 1
		}
	}
	return 0
}

func parseFlags() (config, error) {
	var cfg config
	seed := flag.Uint64("seed", 1, "seed of the nemesis and the workers")
	short := flag.Bool("short", false, "the short run: one mixed scenario (about 2 minutes)")
	flag.DurationVar(&cfg.duration, "duration", 0, "fault phase of each scenario (default 45s; 70s with -short)")
	flag.DurationVar(&cfg.drain, "drain", 30*time.Second, "after the faults stop, how long every item may take to finish")
	flag.DurationVar(&cfg.readyBound, "ready-bound", 30*time.Second, "how long the replicas may take to be ready again after a fault")
	flag.IntVar(&cfg.workers, "workers", 9, "workers (spread over the 3 replicas)")
	flag.IntVar(&cfg.ttl, "lease-seconds", 2, "lease_seconds of every claim")
	names := flag.String("scenarios", "", "comma-separated scenarios (default: all; "+scenarioNames()+")")
	flag.StringVar(&cfg.bin, "bin", "", "the workgraph binary (default: built from ./cmd/workgraph)")
	flag.StringVar(&cfg.out, "out", "bin/chaos-report.md", "where the report is written (empty: nowhere)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the run's directory (replica and cluster logs, history-<scenario>.json)")
	flag.IntVar(&cfg.pgPort, "pg-port", 0, "port of the suite's PostgreSQL, the proxy on the next (default: the first free pair in 55440-55449)")
	flag.IntVar(&cfg.httpPort, "http-port", 0, "first of the 3 replica ports (default: the first free triple in 18440-18449)")
	flag.Parse()
	cfg.seed = *seed
	if cfg.pgPort == 0 || cfg.httpPort == 0 {
		pg, web, err := freePorts()
		if err != nil {
			return cfg, err
		}
		if cfg.pgPort == 0 {
			cfg.pgPort = pg
		}
		if cfg.httpPort == 0 {
			cfg.httpPort = web
		}
	}
	cfg.proxyPort = cfg.pgPort + 1
	if cfg.duration == 0 {
		cfg.duration = 45 * time.Second
		if *short {
			cfg.duration = 70 * time.Second
		}
	}
	switch {
	case *names != "":
		for _, n := range strings.Split(*names, ",") {
			sc, ok := findScenario(strings.TrimSpace(n))
			if !ok {
				return cfg, fmt.Errorf("unknown scenario %q (%s)", n, scenarioNames())
			}
			cfg.scenarios = append(cfg.scenarios, sc)
		}
	case *short:
		sc, _ := findScenario("mixed")
		cfg.scenarios = []scenario{sc}
	default:
		cfg.scenarios = fullScenarios
	}
	if cfg.ttl < 1 || cfg.workers < 1 {
		return cfg, fmt.Errorf("-lease-seconds and -workers must be at least 1")
	}
	return cfg, nil
}

func findScenario(name string) (scenario, bool) {
	for _, sc := range fullScenarios {
		if sc.name == name {
			return sc, true
		}
	}
	return scenario{}, false
}

func scenarioNames() string {
	var n []string
	for _, sc := range fullScenarios {
		n = append(n, sc.name)
	}
	return strings.Join(n, ", ")
}

// setUp starts everything: the cluster, the proxy, the binary, 3 replicas.
func (s *suite) setUp(ctx context.Context) error {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("workgraph-chaos-%d", os.Getuid()))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	stopLeftovers(base, s.logf)
	root, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return err
	}
	s.root = root
	os.WriteFile(filepath.Join(root, "owner.pid"), []byte(fmt.Sprint(os.Getpid())), 0o644)
	s.logf("run directory %s, seed %d", root, s.cfg.seed)

	bin := s.cfg.bin
	if bin == "" {
		bin = filepath.Join(root, "workgraph")
		s.logf("building %s", bin)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/workgraph")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v: %s", err, out)
		}
	}
	s.logf("starting PostgreSQL on 127.0.0.1:%d", s.cfg.pgPort)
	if s.cluster, err = startCluster(ctx, root, s.cfg.pgPort); err != nil {
		return err
	}
	if s.proxy, err = startProxy(fmt.Sprintf("127.0.0.1:%d", s.cfg.proxyPort), fmt.Sprintf("127.0.0.1:%d", s.cfg.pgPort)); err != nil {
		return err
	}
	if s.obs, err = openObserver(ctx, s.cluster.URL()); err != nil {
		return err
	}
	var urls []string
	for i := 0; i < 3; i++ {
		port := s.cfg.pgPort
		if i == 0 {
			port = s.cfg.proxyPort // replica 0 reaches the database through the proxy
		}
		dbURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		r := &replica{
			idx: i, bin: bin, addr: fmt.Sprintf("127.0.0.1:%d", s.cfg.httpPort+i),
			logTo: filepath.Join(root, fmt.Sprintf("replica-%d.log", i)),
			args: []string{"serve", "--database-url", dbURL, "--addr", fmt.Sprintf("127.0.0.1:%d", s.cfg.httpPort+i),
				"--bootstrap-token", bootstrapToken, "--rate-limit", "-1", "--max-conns", "8",
				"--sweep-interval", "1s", "--retry-backoff", "1s", "--max-retry-backoff", "2s",
				"--continuity-window", "2s", "--max-expiries", "100000", "--max-failures", "100000",
				"--max-leases-per-token", "-1"},
		}
		s.replicas = append(s.replicas, r)
		s.logf("starting replica %d on %s (database via %d)", i, r.addr, port)
		if err := r.start(ctx); err != nil {
			return err
		}
		urls = append(urls, r.url())
	}
	s.caller = &caller{replicas: urls, token: bootstrapToken, retryFor: 15 * time.Second,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second}}}
	return nil
}

// close stops every process the suite started; it runs on every exit path.
func (s *suite) close() {
	for _, r := range s.replicas {
		r.stop()
	}
	if s.proxy != nil {
		s.proxy.close()
	}
	if s.obs != nil {
		s.obs.pool.Close()
	}
	if s.cluster != nil {
		s.cluster.stop()
	}
	if s.root != "" {
		if s.cfg.keep {
			s.logf("kept %s", s.root)
		} else {
			os.RemoveAll(s.root)
		}
	}
}

// runScenario runs one scenario on a project of its own and checks it.
func (s *suite) runScenario(ctx context.Context, sc scenario, seed uint64) (row, error) {
	project := fmt.Sprintf("chaos-%s-%d", sc.name, seed)
	s.logf("scenario %s: project %s, %s of faults (%s)", sc.name, project, s.cfg.duration, strings.Join(sc.kinds, ", "))
	rng := rand.New(rand.NewPCG(seed, 0))
	setup := check.Op{Kind: "create-project", Key: newKey()}
	if s.caller.call(ctx, rng, 0, &setup, http.MethodPost, "/v1/projects", map[string]any{"name": project}, nil); setup.Answer != check.Acked {
		return row{}, fmt.Errorf("creating project %s: %s %s", project, setup.Answer, setup.Code)
	}
	pid, err := s.obs.projectID(ctx, project)
	if err != nil {
		return row{}, fmt.Errorf("project id: %w", err)
	}
	w := &workload{c: s.caller, rec: &recorder{}, project: project, ttl: s.cfg.ttl, seed: seed}

	workCtx, stopWork := context.WithCancel(ctx)
	prodCtx, stopProd := context.WithCancel(workCtx)
	personCtx, stopPerson := context.WithCancel(ctx)
	var wg, personWG sync.WaitGroup
	for i := 0; i < s.cfg.workers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); w.worker(workCtx, i) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); w.producer(prodCtx, 3*s.cfg.workers) }()
	go func() { defer wg.Done(); w.replayer(workCtx) }()
	personWG.Add(1)
	go func() { defer personWG.Done(); w.person(personCtx) }()
	defer func() { stopProd(); stopWork(); stopPerson(); wg.Wait(); personWG.Wait() }()

	start := time.Now()
	faults, snaps := s.nemesis(ctx, rng, sc.kinds, start.Add(s.cfg.duration), w, pid)
	if rest := time.Until(start.Add(s.cfg.duration)); rest > 0 {
		sleep(ctx, rest)
	}
	stopProd()
	healed := time.Now()
	s.logf("scenario %s: faults over (%d), draining", sc.name, len(faults))
	if missing := missingKinds(sc.kinds, faults); len(missing) > 0 {
		s.logf("scenario %s: WARNING: no %s fault was injected (the fault phase was too short for one round of its kinds)", sc.name, strings.Join(missing, ", "))
	}

	// Nothing stuck: with the faults healed, every item finishes.
	var drained time.Duration
	var stuck []string
	for {
		open, _, err := s.obs.openItems(ctx, pid)
		if err != nil {
			return row{}, err
		}
		if open == 0 {
			drained = time.Since(healed)
			break
		}
		if time.Since(healed) > s.cfg.drain || ctx.Err() != nil {
			// What is left must at least be claimable once the workers'
			// leases have lapsed.
			stopWork()
			wg.Wait()
			sleep(ctx, time.Duration(s.cfg.ttl)*time.Second+2*time.Second)
			_, stuck, err = s.obs.openItems(ctx, pid)
			if err != nil {
				return row{}, err
			}
			drained = -1
			break
		}
		sleep(ctx, 250*time.Millisecond)
	}
	stopWork()
	wg.Wait()
	stopPerson()
	personWG.Wait()
	if ctx.Err() != nil {
		return row{}, ctx.Err()
	}

	h := &check.History{
		Ops: w.rec.all(), Faults: faults, Snapshots: snaps, TTL: s.cfg.ttl, Stuck: stuck,
		Grace: 3 * time.Second, StuckKeyAfter: 10 * time.Second, ReadyBound: s.cfg.readyBound,
	}
	if h.Leases, h.Items, err = s.obs.history(ctx, pid); err != nil {
		return row{}, fmt.Errorf("reading the history: %w", err)
	}
	if h.Events, err = s.obs.events(ctx, pid); err != nil {
		return row{}, fmt.Errorf("reading the event log: %w", err)
	}
	if h.AppendOnlyTried, h.AppendOnlyErr, err = s.obs.tryRewrite(ctx, pid); err != nil {
		return row{}, fmt.Errorf("trying a rewrite: %w", err)
	}
	res := check.Check(h)
	if s.cfg.keep {
		if b, err := json.Marshal(h); err == nil {
			os.WriteFile(filepath.Join(s.root, "history-"+sc.name+".json"), b, 0o644)
		}
	}
	r := newRow(sc.name, h, res, drained)
	s.logf("scenario %s: %d operations, %d leases, %d items, %d violations", sc.name, r.ops, len(h.Leases), len(h.Items), len(res.Violations))
	return r, nil
}

// missingKinds lists the kinds of which faults holds none.
func missingKinds(kinds []string, faults []check.Fault) []string {
	seen := map[string]bool{}
	for _, f := range faults {
		seen[f.Kind] = true
	}
	var missing []string
	for _, k := range kinds {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	return missing
}
