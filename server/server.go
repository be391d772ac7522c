package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/embedpg"
	"github.com/workgraph-dev/workgraph/lease"
)

// Config is everything the server needs to start.
type Config struct {
	// DatabaseURL of an existing server. Empty: an embedded cluster in
	// DataDir is started (and stopped on shutdown).
	DatabaseURL string
	// DataDir for the embedded cluster; empty: embedpg.DefaultDataDir().
	DataDir string
	// Addr to listen on, e.g. "127.0.0.1:8080"; port 0 picks a free port.
	Addr string
	// BootstrapToken, when set, makes sure an admin token with this secret
	// exists.
	BootstrapToken string
	// Clock decides time for domain code; nil means the database's clock.
	Clock  clock.Clock
	Logger *slog.Logger
	// MaxConns bounds the database pool; 0: the URL's pool_max_conns, else
	// db.DefaultMaxConns.
	MaxConns int32
	// RateLimit is the requests per second each API token may send to this
	// replica (0: api.DefaultRateLimit; negative: unlimited); RateBurst its
	// bucket size (0: api.DefaultRateBurst).
	RateLimit float64
	RateBurst int
	// MaxActiveLeasesPerToken bounds the live leases of one token (0:
	// DefaultMaxActiveLeasesPerToken; negative: unlimited).
	MaxActiveLeasesPerToken int
	// Lease is the lease and attention policy: TTL bounds, retry backoff,
	// failure and expiry limits, the continuity window. Zero fields take the
	// lease package's defaults. Its MaxActivePerToken is set from
	// MaxActiveLeasesPerToken.
	Lease lease.Config
	// SweepInterval is how often expired leases are ended in the background
	// (0: 10s). Claims also end the expired leases of their project.
	SweepInterval time.Duration
	// Demo loads the sample project "demo" at start unless it exists (see
	// package demo).
	Demo bool
}

// Server is a running workgraph server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	cluster  *embedpg.Cluster
	echo     *echo.Echo
	http     *http.Server
	listener net.Listener
	done     chan error
	stops    []func()
	// stopRequests cancels the context of every request: Shutdown calls it
	// when its grace period ends, so a request still running (a long query,
	// a drawing) stops instead of holding the exit.
	stopRequests context.CancelFunc
	// firstToken is the admin token created at first start, until shown.
	firstToken string
}

// Start opens the database, migrates it and starts serving on cfg.Addr. It
// returns once the listener is bound; Shutdown stops everything.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Database{}
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, done: make(chan error, 1)}
	if err := s.openDatabase(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := db.Migrate(ctx, s.pool, s.log); err != nil {
		s.close()
		return nil, err
	}
	s.echo = echo.New()
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.routes()
	if err := s.mount(ctx); err != nil {
		s.close()
		return nil, err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("server: listen on %s: %w", cfg.Addr, err)
	}
	s.listener = ln
	requests, stopRequests := context.WithCancel(context.Background())
	s.stopRequests = stopRequests
	s.http = &http.Server{
		BaseContext:       func(net.Listener) context.Context { return requests },
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// Long-poll claims wait up to 60 s; leave room to answer.
		WriteTimeout: 90 * time.Second,
		IdleTimeout:  120 * time.Second,
	}
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	s.log.Info("workgraph listening", "addr", s.Addr(), "ui", "http://"+s.Addr()+"/")
	s.announceFirstToken()
	return s, nil
}

func (s *Server) openDatabase(ctx context.Context) error {
	url := s.cfg.DatabaseURL
	if url == "" {
		s.log.Info("no database URL given: starting the embedded PostgreSQL", "dir", dataDir(s.cfg.DataDir))
		cluster, err := embedpg.Start(ctx, embedpg.Config{DataDir: s.cfg.DataDir, Logger: s.log, Database: "workgraph"})
		if err != nil {
			return err
		}
		s.cluster = cluster
		url = cluster.URL("workgraph")
	}
	pool, err := db.Open(ctx, url, s.cfg.MaxConns)
	if err != nil {
		return err
	}
	s.pool = pool
	return nil
}

func dataDir(d string) string {
	if d != "" {
		return d
	}
	return embedpg.DefaultDataDir()
}

// Addr is the address the server listens on (with the real port when
// Config.Addr asked for port 0).
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the base URL of the server, e.g. "http://127.0.0.1:8080".
func (s *Server) URL() string { return "http://" + s.Addr() }

// Pool is the server's database pool (for tests and tooling).
func (s *Server) Pool() *pgxpool.Pool { return s.pool }

// Done is closed with the serve loop's error when the server stops serving.
func (s *Server) Done() <-chan error { return s.done }

// Shutdown stops accepting requests, waits for in-flight ones (bounded by
// ctx; then their contexts are cancelled), stops background services and
// closes the database.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	if s.http != nil {
		err = s.http.Shutdown(ctx)
		s.stopRequests()
	}
	s.close()
	return err
}

func (s *Server) close() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	if s.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.cluster.Stop(ctx); err != nil {
			s.log.Error("stopping embedded PostgreSQL", "err", err)
		}
		s.cluster = nil
	}
}

// routes mounts the process-level endpoints.
func (s *Server) routes() {
	s.echo.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	s.echo.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := s.pool.Ping(ctx); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})
}
