package api

import (
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/idempotency"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/metrics"
)

// Defaults of Config. The burst lets one token (often shared by a fleet of
// agents, or a script creating a few hundred items) send a few hundred
// requests at once; the sustained rate is what bounds a runaway client.
const (
	DefaultRateLimit      = 50
	DefaultRateBurst      = 300
	DefaultRequestTimeout = 30 * time.Second
)

// Config is what the API needs: the services it fronts and its limits.
type Config struct {
	Log   *slog.Logger
	Pool  *pgxpool.Pool
	Clock clock.Clock
	Auth  *auth.Service
	Services
	// TranslateUnknown turns an error of no wgerr kind that reached a
	// handler into one of a kind when it can (the server passes
	// db.Translate, so a lost connection no service translated is 503, not
	// 500); nil: such errors are internal. api itself never imports db.
	TranslateUnknown func(error) error
	// RateLimit is the sustained requests per second each token may send
	// (per server replica); 0 means DefaultRateLimit, negative disables.
	RateLimit float64
	// RateBurst is the bucket size; 0 means DefaultRateBurst.
	RateBurst int
	// RequestTimeout bounds each request's database work (claims add their
	// wait_seconds); 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// IdempotencyPool, when set, is where Idempotency-Key records are
	// written: a pool whose sessions commit asynchronously
	// (synchronous_commit=off), so the bookkeeping around a request does not
	// wait for WAL flushes the way the request's own transaction does. A
	// database crash may then lose the records of the last instants. A
	// request's effect is marked on its record inside its own (synchronous)
	// transaction, so a lost record is one whose request took no effect
	// either (a retry runs it), and a lost answer leaves the effect marked
	// (a retry gets outcome_unknown; nothing runs twice). Nil: Pool.
	IdempotencyPool *pgxpool.Pool
	// Throttle limits requests without valid credentials per client
	// address (shared with the web UI's sign-in); nil: one with
	// auth.NewThrottle's defaults.
	Throttle *auth.Throttle
	// SearchConcurrency bounds the item searches (lists with q) one project
	// may run at once on this replica; SearchWait is how long one beyond
	// the bound waits for a slot before 429. 0: DefaultSearchConcurrency,
	// DefaultSearchWait.
	SearchConcurrency int
	SearchWait        time.Duration
	// PlanBytesInFlight bounds the bodies of the plan imports this replica
	// reads and decodes at once, in bytes; PlanWait is how long an import
	// beyond the bound waits for room before 429. 0:
	// DefaultPlanBytesInFlight, DefaultPlanWait.
	PlanBytesInFlight int64
	PlanWait          time.Duration
	// Bodies is the replica's budget of request bodies in memory at once,
	// shared with the web UI's forms: every route that reads a body takes
	// room in it before reading (gateBodies), but plan imports, which the
	// plan gate bounds on its own. Nil: a budget of the API's own with
	// bodygate's defaults.
	Bodies *bodygate.Gate
	// Metrics counts claims, lease outcomes, refused calls and answers
	// (nil: nothing is counted).
	Metrics *metrics.Metrics
	// StreamHeartbeat is how often an idle event stream sends a comment;
	// 0 means DefaultStreamHeartbeat.
	StreamHeartbeat time.Duration
	// StreamStall is how long a write to an event stream's reader may
	// wait (its connection's buffers full: it stopped reading) before the
	// stream is dropped; 0 means two heartbeats.
	StreamStall time.Duration
}

// API is the /v1 JSON API.
type API struct {
	log   *slog.Logger
	auth  *auth.Service
	clock clock.Clock
	svc   Services
	idem  *idempotency.Store
	// translate is Config.TranslateUnknown.
	translate func(error) error
	// Caches of facts that never change (see immutable).
	projects *immutable[string, graph.Project]
	holders  *immutable[uuid.UUID, holder]
	limits   *limiters
	searches *searchGate
	plans    *bodygate.Gate
	bodies   *bodygate.Gate
	throttle *auth.Throttle
	timeout  time.Duration
	metrics  *metrics.Metrics
	// streamBeat is Config.StreamHeartbeat; streamStall, Config.StreamStall.
	streamBeat, streamStall time.Duration
	// routes as registered, for the OpenAPI drift test and the docs.
	routes []Route
}

// Route is one registered API route (path in OpenAPI form, e.g.
// "/v1/projects/{project}/items").
type Route struct {
	Method string
	Path   string
}

// New builds the API from cfg.
func New(cfg Config) *API {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.Log = logs.WithRequestIDs(cfg.Log)
	if cfg.Clock == nil {
		cfg.Clock = clock.Database{}
	}
	limit := rate.Limit(cfg.RateLimit)
	switch {
	case cfg.RateLimit == 0:
		limit = DefaultRateLimit
	case cfg.RateLimit < 0:
		limit = rate.Inf
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.StreamHeartbeat <= 0 {
		cfg.StreamHeartbeat = DefaultStreamHeartbeat
	}
	if cfg.StreamStall <= 0 {
		cfg.StreamStall = 2 * cfg.StreamHeartbeat
	}
	if cfg.Bodies == nil {
		cfg.Bodies = bodygate.New(0, 0)
	}
	if cfg.Throttle == nil {
		cfg.Throttle = auth.NewThrottle(0, 0, cfg.Log)
	}
	return &API{
		log:         cfg.Log,
		auth:        cfg.Auth,
		clock:       cfg.Clock,
		svc:         cfg.Services,
		translate:   cfg.TranslateUnknown,
		idem:        idempotency.NewStore(idemPool(cfg), cfg.Clock),
		projects:    newImmutable[string, graph.Project](10_000),
		holders:     newImmutable[uuid.UUID, holder](100_000),
		limits:      &limiters{limit: limit, burst: cfg.RateBurst, m: make(map[uuid.UUID]*rate.Limiter)},
		searches:    newSearchGate(cfg.SearchConcurrency, cfg.SearchWait),
		plans:       newPlanGate(cfg.PlanBytesInFlight, cfg.PlanWait),
		bodies:      cfg.Bodies,
		throttle:    cfg.Throttle,
		timeout:     cfg.RequestTimeout,
		metrics:     cfg.Metrics,
		streamBeat:  cfg.StreamHeartbeat,
		streamStall: cfg.StreamStall,
	}
}

// Mount registers every /v1 route on e, the request logger, and the
// problem+json error handler for /v1 paths (other paths keep e's handler).
func (a *API) Mount(e *echo.Echo) {
	e.HTTPErrorHandler = a.ErrorHandler(e.HTTPErrorHandler)
	e.Use(a.logRequests)
	a.handlePublic(e, http.MethodGet, "/openapi.json", a.openAPI)
	a.mountProjects(e)
	a.mountTokens(e)
	a.mountIDs(e)
	a.mountItems(e)
	a.mountDependencies(e)
	a.mountClaims(e)
	a.mountBatches(e)
	a.mountLeases(e)
	a.mountBudgets(e)
	a.mountAttention(e)
	a.mountPlans(e)
	a.mountFence(e)
	a.mountWebhooks(e)
	a.mountEvents(e)
	// Unknown /v1 paths answer problem+json: 405 with Allow when the path
	// exists for other methods, else 404. (A catch-all of the web UI must
	// not turn them into pages.)
	e.RouteNotFound("/v1/*", a.noRoute)
}

// noRoute answers a /v1 request that matched no route.
func (a *API) noRoute(c echo.Context) error {
	var allow []string
	for _, r := range a.routes {
		if pathMatches(r.Path, c.Request().URL.Path) && !slices.Contains(allow, r.Method) {
			allow = append(allow, r.Method)
		}
	}
	if len(allow) == 0 {
		return echo.ErrNotFound
	}
	sort.Strings(allow)
	c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
	return echo.ErrMethodNotAllowed
}

// pathMatches reports whether a request path fits an OpenAPI-form route
// path ("{param}" matches one segment).
func pathMatches(route, path string) bool {
	rs, ps := strings.Split(route, "/"), strings.Split(path, "/")
	if len(rs) != len(ps) {
		return false
	}
	for i := range rs {
		if rs[i] != ps[i] && !(strings.HasPrefix(rs[i], "{") && ps[i] != "") {
			return false
		}
	}
	return true
}

// Routes lists the registered API routes.
func (a *API) Routes() []Route { return append([]Route(nil), a.routes...) }

// routeOpts tunes one route.
type routeOpts struct {
	roles []auth.Role
	// selfTimeout: the handler sets its own deadline (long polls).
	selfTimeout bool
	// effect: which of the handler's transactions take effect, for
	// Idempotency-Key records.
	effect effectKind
	// lazy: a token verified before is checked in the request's first
	// round trip rather than looked up first (authenticateLazy): the steps
	// of a lease, whose every answer comes from a statement.
	lazy bool
	// bodyLimit: the route's own body limit (zero: maxBodyBytes).
	bodyLimit bodyLimit
	// admit, if set, runs after the rate limit and before anything reads
	// the body (a gate on what the request may hold while it runs); a
	// route with one is not counted in the budget of bodies (gateBodies),
	// so that a plan import is bounded once, by the plan gate.
	admit echo.MiddlewareFunc
}

// handle registers an authenticated route; o.roles lists who besides
// admin may call it (none: admin only).
func (a *API) handle(e *echo.Echo, method, path string, h echo.HandlerFunc, o routeOpts) {
	mw := []echo.MiddlewareFunc{noStore, checkParams}
	if o.bodyLimit.bytes != 0 {
		mw = append(mw, withBodyLimit(o.bodyLimit))
	}
	if method != http.MethodGet {
		mw = append(mw, noQuery, jsonBody)
	}
	if !o.selfTimeout {
		mw = append(mw, a.bounded(a.timeout))
	}
	authn := a.authenticate
	if o.lazy {
		authn = a.authenticateLazy
	}
	mw = append(mw, authn, a.requireRole(o.roles...), a.rateLimit)
	switch {
	case o.admit != nil:
		mw = append(mw, o.admit)
	case method != http.MethodGet:
		mw = append(mw, a.gateBodies)
	}
	mw = append(mw, a.idempotent(o.effect))
	e.Add(method, "/v1"+path, h, mw...)
	a.routes = append(a.routes, Route{Method: method, Path: "/v1" + openAPIPath(path)})
}

// handlePublic registers an unauthenticated route.
func (a *API) handlePublic(e *echo.Echo, method, path string, h echo.HandlerFunc) {
	e.Add(method, "/v1"+path, h, noStore, checkParams, a.bounded(a.timeout))
	a.routes = append(a.routes, Route{Method: method, Path: "/v1" + openAPIPath(path)})
}

// openAPIPath turns Echo's ":param" segments into OpenAPI's "{param}".
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Role sets used by the route tables.
var (
	anyRole     = routeOpts{roles: []auth.Role{auth.RoleHuman, auth.RoleAgent}}
	people      = routeOpts{roles: []auth.Role{auth.RoleHuman}}
	workers     = routeOpts{roles: []auth.Role{auth.RoleAgent}}
	workersLazy = routeOpts{roles: []auth.Role{auth.RoleAgent}, lazy: true}
	adminOnly   = routeOpts{}
	workersWait = routeOpts{roles: []auth.Role{auth.RoleAgent}, selfTimeout: true, effect: effectLease, lazy: true}
)

func idemPool(cfg Config) *pgxpool.Pool {
	if cfg.IdempotencyPool != nil {
		return cfg.IdempotencyPool
	}
	return cfg.Pool
}
