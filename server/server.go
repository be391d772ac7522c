package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/embedpg"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/webhook"
)

// Config is everything the server needs to start.
type Config struct {
	// DatabaseURL of an existing server. Empty: the embedded cluster in
	// DataDir, owned by this process while it runs (embedpg.Config.Own:
	// started, or adopted from a dead owner, and stopped on shutdown;
	// refused while another live process owns DataDir).
	DatabaseURL string
	// ListenDatabaseURL is a direct connection (not through a pooler) for
	// what needs a session of its own: the LISTEN of long-poll claims and
	// the migration lock. Empty or equal to DatabaseURL: DatabaseURL is
	// direct too. When it differs, DatabaseURL is taken to go through
	// PgBouncer in transaction mode: statements are not prepared on the
	// server (db.PoolerURL, unless the URL names default_query_exec_mode),
	// no session settings are sent at connection start (PgBouncer refuses
	// them: StatementTimeout is then the database role's statement_timeout),
	// and Idempotency-Key records commit synchronously.
	ListenDatabaseURL string
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
	// UnauthenticatedRate is the sustained failed authentications (API
	// requests without valid credentials, failed sign-ins) per second one
	// client address may make to this replica before its requests are
	// refused with 429 (0: auth.DefaultUnauthenticatedRate; negative:
	// unlimited); UnauthenticatedBurst its bucket size (0:
	// auth.DefaultUnauthenticatedBurst).
	UnauthenticatedRate  float64
	UnauthenticatedBurst int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed: a request whose connection comes
	// from one of them is throttled and logged as the client
	// X-Forwarded-For names (see auth.Proxies.Client), and its cookies
	// are Secure when X-Forwarded-Proto says https (auth.Secure). The
	// zero value trusts no one: a request is its connection's peer, over
	// TLS exactly when its connection is.
	TrustedProxies auth.Proxies
	// MaxActiveLeasesPerToken bounds the live leases of one token (0:
	// DefaultMaxActiveLeasesPerToken; negative: unlimited).
	MaxActiveLeasesPerToken int
	// Lease is the lease policy: TTL bounds, retry backoff, failure and
	// expiry limits. Zero fields take the lease package's defaults. Its
	// MaxActivePerToken is set from MaxActiveLeasesPerToken.
	Lease lease.Config
	// Attention is the attention policy (the continuity window), used by
	// the API and the web UI alike. Zero fields take the attention
	// package's defaults.
	Attention attention.Config
	// BodyReadTimeout bounds how long a request's body may take to arrive
	// once its headers have (0: DefaultBodyReadTimeout). A client that
	// trickles its body is cut; a long poll, whose body arrives at once and
	// whose answer comes late, is not bound by it.
	BodyReadTimeout time.Duration
	// BodyBytesInFlight bounds the request bodies (the API's and the web
	// UI's forms; plan imports have a bound of their own) this replica reads
	// and holds at once, in bytes: one shared bodygate.Gate (0:
	// bodygate.DefaultCapacity, 64 MiB).
	BodyBytesInFlight int64
	// StatementTimeout bounds every statement the server's pool runs
	// (PostgreSQL's statement_timeout, set on each connection; the
	// database cancels a statement that runs longer and the request is
	// answered 503 unavailable). 0: DefaultStatementTimeout; negative: no
	// bound. Migrations run on a connection of their own, without it.
	StatementTimeout time.Duration
	// SweepInterval is how often expired leases are ended in the background
	// (0: 10s). Claims also end the expired leases of their project.
	SweepInterval time.Duration
	// FenceKeyRefresh is how often the replica reads the fence keys again,
	// so that a rotation (`workgraph fence rotate`) reaches it without a
	// restart (0: fencekey.RefreshInterval).
	FenceKeyRefresh time.Duration
	// EventsRetention is how long events are kept before the retention
	// service deletes them (0: events.DefaultRetention, 30 days; negative:
	// forever; else at least events.MinRetention, a day).
	EventsRetention time.Duration
	// EventsFollowInterval is how often the replica looks for new events
	// while a long poll or stream waits (0: events.DefaultFollowInterval).
	EventsFollowInterval time.Duration
	// EventsHeartbeat is how often an idle event stream sends a comment
	// (0: api.DefaultStreamHeartbeat).
	EventsHeartbeat time.Duration
	// EventsStall is how long a write to an event stream's reader (API
	// streams and the web UI's live pages) may wait, its connection's
	// buffers full, before the stream is dropped (0: two heartbeats).
	EventsStall time.Duration
	// LiveRefresh is how often a web page's live region (the workers
	// page's live leases) is fetched again by the browser (0:
	// web.DefaultLiveRefresh).
	LiveRefresh time.Duration
	// FirstStartOut is where the admin token made at first start (and the
	// demo project's token, with Demo) is printed, once, as a block of its
	// own (`serve` gives its stderr); the log then says only that it was
	// made. Nil: the token goes into a log line instead (a server embedded
	// in a program or a test).
	FirstStartOut io.Writer
	// FirstStartFormat is the form of what FirstStartOut shows:
	// logs.FormatJSON, one JSON object a token in the log's JSON shape
	// (time, level, msg; project, token, ui), whatever the log level, so
	// that a stream of JSON lines stays one; else (text, "") a framed block.
	FirstStartFormat string
	// MetricsAddr, when set, serves /metrics (Prometheus) on a listener of
	// its own, e.g. "127.0.0.1:9464"; MetricsOnMain also serves it on Addr.
	MetricsAddr   string
	MetricsOnMain bool
	// CensusInterval is how old the census behind the gauges of /metrics
	// (items by state, live leases, open attention) may grow before a scrape
	// takes a new one (0: metrics.DefaultCensusInterval; negative: every
	// scrape).
	CensusInterval time.Duration
	// PprofAddr, when set, serves net/http/pprof under /debug/pprof/ on a
	// loopback address of its own, e.g. "127.0.0.1:6060" (any other address
	// is refused).
	PprofAddr string
	// Tracing, when enabled, makes a span of every request and of every
	// database transaction below it (see package telemetry). The caller
	// owns it (and shuts it down after the server); nil: no spans.
	Tracing *telemetry.Provider
	// Demo loads the sample project "demo" at start unless it exists (see
	// package demo).
	Demo bool
	// PublicURL is the base URL people reach the web UI at, for the links
	// of notifications (webhooks, answer links), e.g.
	// "https://workgraph.example.com". Empty: "http://" + the listen
	// address.
	PublicURL string
	// Webhooks is how this replica delivers webhooks.
	Webhooks WebhooksConfig
}

// WebhooksConfig is the delivery of webhooks by one replica.
type WebhooksConfig struct {
	// AllowPrivate lets webhooks name and reach loopback, link-local and
	// private addresses (refused by default: a webhook URL must not be a
	// way into the server's own network).
	AllowPrivate bool
	// Timeout bounds one delivery attempt (0: webhook.RequestTimeout).
	Timeout time.Duration
	// Concurrency bounds the attempts in flight (0:
	// webhook.DefaultConcurrency).
	Concurrency int
	// PerWebhook bounds the attempts in flight of one webhook over every
	// replica (0: webhook.DefaultPerWebhook); give every replica the same.
	PerWebhook int
	// Off: this replica delivers nothing (other replicas still do).
	Off bool
	// DeliveryRetention is how long the records of finished deliveries
	// (delivered or failed) are kept before the retention service
	// deletes them (0: the events' retention; negative: forever; else at
	// least events.MinRetention, a day).
	DeliveryRetention time.Duration
}

// DefaultStatementTimeout is Config.StatementTimeout's default: well below
// the API's 30 s request timeout, so that one slow statement ends (and frees
// its connection) long before its request would.
const DefaultStatementTimeout = 10 * time.Second

// Bounds of the HTTP server on slow clients.
const (
	// HeaderReadTimeout bounds the arrival of a request's headers.
	HeaderReadTimeout = 10 * time.Second
	// DefaultBodyReadTimeout is Config.BodyReadTimeout's default.
	DefaultBodyReadTimeout = 30 * time.Second
	// IdleTimeout closes a kept-alive connection without a request.
	IdleTimeout = 120 * time.Second
	// MaxHeaderBytes bounds a request's request line and headers (large enough
	// that an over-long query parameter is answered 400 naming it); beyond
	// it, 431 header_too_large (headerBound).
	MaxHeaderBytes = 256 << 10
)

// Server is a running workgraph server.
type Server struct {
	cfg   Config
	log   *slog.Logger
	pool  *pgxpool.Pool
	dbURL string
	// directURL is ListenDatabaseURL, else dbURL; pooled says dbURL goes
	// through a pooler in transaction mode.
	directURL string
	pooled    bool
	cluster   *embedpg.Cluster
	echo      *echo.Echo
	http      *http.Server
	listener  net.Listener
	done      chan error
	stops     []func()
	side      []*sideServer
	registry  *prometheus.Registry
	metrics   *metrics.Metrics
	// tracer starts the spans of requests; nil when tracing is off.
	tracer trace.Tracer
	// stopRequests cancels the context of every request: Shutdown calls it
	// when its grace period ends, so a request still running (a long query,
	// a drawing) stops instead of holding the exit.
	stopRequests context.CancelFunc
	// follower wakes event streams; Shutdown stops it first, so streams
	// end instead of holding the exit.
	follower *events.Follower
	// notifier wakes long-poll claims; shutting down drains it, so they
	// answer at once instead of holding the exit.
	notifier *lease.Notifier
	// listening is the long poll notifier's Listening.
	listening <-chan struct{}
	// firstToken is the admin token created at first start, until shown.
	firstToken string
	// demoToken is the human token of the demo project just loaded, until
	// shown.
	demoToken string
}

// Start binds cfg.Addr, then opens the database, migrates it and starts
// serving on that listener. It returns once serving; Shutdown stops
// everything.
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
	if err := events.CheckRetention(max(cfg.EventsRetention, 0)); err != nil {
		return nil, err
	}
	if err := webhook.CheckRetention(max(cfg.Webhooks.DeliveryRetention, 0)); err != nil {
		return nil, err
	}
	if err := cfg.Lease.Check(); err != nil {
		return nil, err
	}
	if err := checkPublicURL(cfg.PublicURL); err != nil {
		return nil, err
	}
	if err := checkNotNegative(cfg); err != nil {
		return nil, err
	}
	// Lines logged with a request's context name its request id.
	cfg.Logger = logs.WithRequestIDs(cfg.Logger)
	s := &Server{cfg: cfg, log: cfg.Logger, done: make(chan error, 1)}
	if cfg.Tracing.Enabled() {
		s.tracer = cfg.Tracing.Tracer("server")
	}
	// Bind first: a busy address is refused before the database is
	// started or migrated, and the bound listener is the one served.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", cfg.Addr, err)
	}
	s.listener = ln
	if err := s.bindSide(); err != nil {
		s.close()
		return nil, err
	}
	if err := s.openDatabase(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.close()
		return nil, err
	}
	s.setupMetrics()
	s.echo = echo.New()
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.Pre(commonHeaders, headerBound)
	s.echo.Use(s.instrument)
	s.routes()
	if err := s.mount(ctx); err != nil {
		s.close()
		return nil, startError(err, cfg.StatementTimeout)
	}

	bodyTimeout := cfg.BodyReadTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyReadTimeout
	}
	requests, stopRequests := context.WithCancel(context.Background())
	s.stopRequests = stopRequests
	s.http = &http.Server{
		BaseContext:       func(net.Listener) context.Context { return requests },
		Handler:           headAsGet(bodyDeadline(bodyTimeout, s.echo)),
		ReadHeaderTimeout: HeaderReadTimeout,
		// No ReadTimeout: it would also end a long poll (net/http cancels a
		// request whose connection's read deadline passes while it waits);
		// bodyDeadline bounds the body instead.
		// Long-poll claims wait up to 60 s; leave room to answer.
		WriteTimeout:   90 * time.Second,
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: transportHeaderBytes,
		// What net/http reports (a failed accept, a handler's misuse of
		// the connection) goes to the server's log, in its format.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// Event streams never become idle, and a long-poll claim waits up to a
	// minute: end them when shutdown begins.
	s.http.RegisterOnShutdown(s.follower.Stop)
	s.http.RegisterOnShutdown(s.notifier.Drain)
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	s.serveSide()
	s.log.Info("workgraph listening", "addr", s.Addr(), "ui", "http://"+s.Addr()+"/", "version", buildinfo.Get().Short())
	s.announceFirstToken()
	s.announceDemoToken()
	return s, nil
}

func (s *Server) openDatabase(ctx context.Context) error {
	url := s.cfg.DatabaseURL
	if url == "" {
		s.log.Info("no database URL given: starting the embedded PostgreSQL", "dir", dataDir(s.cfg.DataDir))
		cluster, err := embedpg.Start(ctx, embedpg.Config{DataDir: s.cfg.DataDir, Logger: s.log, Database: "workgraph", Own: true})
		if err != nil {
			return err
		}
		s.cluster = cluster
		url = cluster.URL("workgraph")
	}
	s.dbURL, s.directURL = url, url
	if l := s.cfg.ListenDatabaseURL; l != "" && l != url {
		s.directURL, s.pooled = l, true
		s.dbURL = db.PoolerURL(url)
	}
	var settings map[string]string
	switch d := s.cfg.StatementTimeout; {
	case s.pooled:
		if d >= 0 {
			s.log.Info("database URL behind a pooler: statements are bounded by the role's statement_timeout, not --statement-timeout")
		}
	case d == 0:
		settings = map[string]string{"statement_timeout": durationSetting(DefaultStatementTimeout)}
	case d > 0:
		settings = map[string]string{"statement_timeout": durationSetting(d)}
	}
	pool, err := db.OpenWithSettings(ctx, s.dbURL, s.cfg.MaxConns, settings)
	if err != nil {
		return err
	}
	s.pool = pool
	return nil
}

// startError names --statement-timeout in a start that failed because a
// statement ran out of the time it gives each (the first project and
// token, the demo): "the statement was cancelled" alone does not say which
// setting to change.
func startError(err error, statementTimeout time.Duration) error {
	if statementTimeout > 0 && db.StatementCancelled(err) {
		return fmt.Errorf("%w: statement-timeout %s cancelled a statement at start; give statements more time", err, statementTimeout)
	}
	return err
}

// durationSetting spells d for a PostgreSQL setting in milliseconds (at
// least 1).
func durationSetting(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
}

// migrate brings the schema up to date on a pool of its own on the direct
// URL, which the statement timeout does not bound (building an index on a
// large table may take longer).
func (s *Server) migrate(ctx context.Context) error {
	pool, err := db.Open(ctx, s.directURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	return db.Migrate(ctx, pool, s.log)
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

// checkPublicURL refuses a Config.PublicURL that is not an absolute http
// or https URL: every link of every notification would be broken.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("public-url %q: must be an absolute http or https URL, e.g. https://workgraph.example.com", s)
	}
	return nil
}

// checkNotNegative refuses a negative value for the settings where
// negative means nothing (0 is their default): a typo there must not start
// a server that quietly uses the default instead.
func checkNotNegative(cfg Config) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"webhooks-timeout", cfg.Webhooks.Timeout},
		{"events-heartbeat", cfg.EventsHeartbeat},
		{"events-stall", cfg.EventsStall},
		{"events-follow-interval", cfg.EventsFollowInterval},
		{"sweep-interval", cfg.SweepInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s %s: must not be negative (0 or left out: the default)", d.flag, d.v)
		}
	}
	if cfg.Webhooks.Concurrency < 0 {
		return fmt.Errorf("webhooks-concurrency %d: must not be negative (0 or left out: the default)", cfg.Webhooks.Concurrency)
	}
	if cfg.Webhooks.PerWebhook < 0 {
		return fmt.Errorf("webhooks-concurrency-per-webhook %d: must not be negative (0 or left out: the default)", cfg.Webhooks.PerWebhook)
	}
	if cfg.EventsHeartbeat > MaxEventsHeartbeat {
		return fmt.Errorf("events-heartbeat %s: at most %s (the Go client, and so workgraph events --follow, takes a stream "+
			"silent for 45 s for dead and reconnects; many proxies close a connection idle for 60 s)", cfg.EventsHeartbeat, MaxEventsHeartbeat)
	}
	return nil
}

// MaxEventsHeartbeat bounds Config.EventsHeartbeat: an idle stream's
// keep-alive must come well within the Go client's 45 s idle limit and the
// 60 s idle timeout of common proxies, or every quiet stream is dropped
// and reconnected.
const MaxEventsHeartbeat = 30 * time.Second

// PublicURL is the base URL of notification links: Config.PublicURL, else
// URL.
func (s *Server) PublicURL() string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	return s.URL()
}

// Pool is the server's database pool (for tests and tooling).
func (s *Server) Pool() *pgxpool.Pool { return s.pool }

// Listening is closed once the long poll's LISTEN connection (the
// notifier that wakes waiting claims) is first active. A waiting claim
// that comes before is served too: the first LISTEN, like every
// reconnection, gives each waiting claim one more claim, since what
// became ready before it was not notified. A test that counts the long
// poll's claims waits for Listening, so that this claim is not counted.
func (s *Server) Listening() <-chan struct{} { return s.listening }

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
	if s.http == nil && s.listener != nil {
		s.listener.Close() // never served: Shutdown does not close it
	}
	s.closeSide()
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

// commonHeaders sets the headers every answer carries, whatever route (or
// none) serves it: browsers must never guess a type other than the one
// declared (a JSON answer read as HTML would run a stored script).
func commonHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		return next(c)
	}
}

// headAsGet answers a HEAD request as its GET (RFC 9110, 9.3.2: the same
// status and headers, no body), for the probes and link checkers that
// send HEAD: the handler gets a copy of the request with the method GET,
// and net/http, which still holds the HEAD request, sends no body.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			get := r.WithContext(r.Context())
			get.Method = http.MethodGet
			r = get
		}
		next.ServeHTTP(w, r)
	})
}

// routes mounts the process-level endpoints.
func (s *Server) routes() {
	// /healthz says the process serves, and which build it is.
	s.echo.GET("/healthz", func(c echo.Context) error {
		bi := buildinfo.Get()
		return c.JSON(http.StatusOK, map[string]any{"status": "ok",
			"version": bi.Version, "commit": bi.Commit, "modified": bi.Modified, "build_date": bi.BuildDate})
	})
	s.echo.GET("/readyz", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := s.pool.Ping(ctx); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})
	if s.cfg.MetricsOnMain {
		s.echo.GET("/metrics", echo.WrapHandler(s.metricsHandler()))
	}
}
