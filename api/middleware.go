package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/wgerr"
)

const principalKey = "workgraph.principal"

// quietKey marks a request whose refusal is counted by auth.Throttle, which
// logs a summary: its own line is logged at debug only.
const quietKey = "workgraph.quiet"

// principal is the authenticated caller; routes without authentication
// never call it.
func principal(c echo.Context) auth.Principal {
	p, _ := c.Get(principalKey).(auth.Principal)
	return p
}

// logRequests logs every /v1 request with its status and duration, and
// answers errors that reached it (so the status is known when logging).
func (a *API) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isAPIPath(c.Request().URL.Path) {
			return next(c)
		}
		start := time.Now()
		// The server names every request (server.Start); the API alone
		// (no server around it) names its own.
		id := logs.RequestID(c.Request().Context())
		if id == "" {
			id = logs.AcceptRequestID(c.Request().Header.Get(RequestIDHeader))
		}
		c.Set(requestIDKey, id)
		// Every line logged with the request's context names the id.
		c.SetRequest(c.Request().WithContext(logs.WithRequestID(c.Request().Context(), id)))
		c.Response().Header().Set(RequestIDHeader, id)
		err := next(c)
		if err != nil {
			writeProblem(c, a.log, a.unknown(err))
		}
		took := time.Since(start)
		a.observe(c, err, took)
		req := c.Request()
		level := requestLevel(c.Response().Status, took)
		if quiet, _ := c.Get(quietKey).(bool); quiet && level < slog.LevelError {
			level = slog.LevelDebug
		}
		// Routine answers are logged at debug, which production does not
		// enable: build no line for them.
		if !a.log.Enabled(req.Context(), level) {
			return nil
		}
		attrs := []any{
			"method", req.Method, "path", req.URL.Path, "status", c.Response().Status,
			"duration", took.Round(time.Microsecond), "bytes", c.Response().Size,
			"client", clientOf(req),
		}
		if p, ok := c.Get(principalKey).(auth.Principal); ok {
			attrs = append(attrs, "principal", p.String())
		}
		a.log.Log(req.Context(), level, "request", attrs...)
		return nil
	}
}

// clientOf is the client address a request's log line names: the address
// the throttle counts the request under, unmasked (auth.ClientIP: the
// peer, or the client a trusted proxy names); the peer as it is when that
// is not an IP address.
func clientOf(r *http.Request) string {
	if addr := auth.ClientIP(r); addr.IsValid() {
		return addr.String()
	}
	return r.RemoteAddr
}

// RequestIDHeader names a request in logs and answers: the caller's own
// value when it is sane (see logs.AcceptRequestID), else one the server
// makes up.
// Every /v1 answer carries it, and so does every problem (request_id).
const RequestIDHeader = "X-Request-Id"

const requestIDKey = "workgraph.request_id"

// requestID is the id of the request (empty outside /v1).
func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// slowRequest is how long a request may take before its line is logged at
// info level even when it succeeded.
const slowRequest = time.Second

// requestLevel is the level of a request's log line: routine answers at
// debug (agents send a heartbeat every few seconds; a line each would drown
// everything else and cost the server a write each), refusals (4xx) and slow
// requests at info, an unavailable database (503) at warn, other server
// errors at error.
func requestLevel(status int, took time.Duration) slog.Level {
	switch {
	case status == http.StatusServiceUnavailable:
		return slog.LevelWarn
	case status >= 500:
		return slog.LevelError
	case status >= 400 || took >= slowRequest:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// throttled is the refusal (429, with Retry-After) of a request from addr
// while the address is throttled for requests without valid credentials
// (auth.Throttle), or nil; a request whose bearer this replica verified
// before is not refused (auth.Service.Throttled).
func (a *API) throttled(c echo.Context, addr string) error {
	bearer, _ := bearerOf(c) // "" when malformed: refused with the rest
	wait, blocked := a.auth.Throttled(a.throttle, addr, bearer)
	if !blocked {
		return nil
	}
	c.Set(quietKey, true)
	secs := int(math.Ceil(wait.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return wgerr.New(wgerr.CodeRateLimited, "too many requests without valid credentials from this address; retry after %d s", secs)
}

// authenticate requires "Authorization: Bearer <token>". The web UI's
// session cookie is never looked at. A request without valid credentials
// counts against its client address (auth.Throttle); while the address is
// throttled its requests are refused with 429 before any token is looked
// up, but those with a token this replica verified before (throttled).
func (a *API) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr := auth.ClientAddr(c.Request())
		if err := a.throttled(c, addr); err != nil {
			return err
		}
		p, err := a.verify(c)
		if errors.Is(err, wgerr.Unauthenticated) {
			a.throttle.Fail(addr)
			c.Set(quietKey, true)
		}
		if err != nil {
			return err
		}
		c.Set(principalKey, p)
		// The actor of the request's changes, for the event log.
		c.SetRequest(c.Request().WithContext(events.WithActor(c.Request().Context(), p.String())))
		return next(c)
	}
}

// verify reads the bearer token of the request.
func (a *API) verify(c echo.Context) (auth.Principal, error) {
	bearer, err := bearerOf(c)
	if err != nil {
		return auth.Principal{}, err
	}
	return a.auth.Authenticate(c.Request().Context(), bearer)
}

// bearerOf is the request's bearer string. A request carrying more than
// one Authorization header is refused (invalid_argument): which of them
// counts would be a guess, and a proxy that adds its own credentials
// beside the client's must not have either silently win.
func bearerOf(c echo.Context) (string, error) {
	if n := len(c.Request().Header.Values(echo.HeaderAuthorization)); n > 1 {
		return "", wgerr.InvalidField(echo.HeaderAuthorization, "the request carries %d Authorization headers; send exactly one, \"Bearer <token>\"", n)
	}
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	scheme, bearer, ok := strings.Cut(h, " ")
	if h == "" {
		return "", wgerr.New(wgerr.CodeUnauthenticated, "missing Authorization: Bearer <token> header")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(bearer) == "" {
		return "", wgerr.New(wgerr.CodeUnauthenticated, "the Authorization header must be \"Bearer <token>\"")
	}
	return strings.TrimSpace(bearer), nil
}

// requireRole refuses callers whose role is not among roles (admin always
// passes) with 403 forbidden. A resource of a project the caller may not
// see answers 404 not_found first, whatever the caller's role: another
// project's resources are not found, never forbidden.
func (a *API) requireRole(roles ...auth.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p := principal(c)
			if !p.Has(roles...) {
				if err := a.visible(c); err != nil {
					return err
				}
				return wgerr.New(wgerr.CodeForbidden, "%s token may not %s %s", article(string(p.Role)), c.Request().Method, c.Path())
			}
			return next(c)
		}
	}
}

// article is word with its indefinite article ("an agent", "a human").
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// visible resolves the project the request's path names (its {project}, or
// the project of the lease or attention request in {id}) and answers
// not_found when it does not exist or the caller may not see it.
func (a *API) visible(c echo.Context) error {
	var err error
	switch {
	case c.Param("project") != "":
		_, err = a.project(c)
	case strings.HasPrefix(c.Path(), "/v1/leases/:id"):
		_, _, err = a.leaseProject(c)
	case strings.HasPrefix(c.Path(), "/v1/attention/:id"):
		_, _, err = a.attentionProject(c)
	}
	return err
}

// limiters keeps one token bucket per token. Limits are per server
// replica.
type limiters struct {
	mu    sync.Mutex
	limit rate.Limit
	burst int
	m     map[uuid.UUID]*rate.Limiter
}

func (l *limiters) get(id uuid.UUID) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[id]
	if !ok {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.m[id] = lim
	}
	return lim
}

// rateLimit answers 429 rate_limited with Retry-After when the caller's
// token has spent its bucket.
func (a *API) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a.limits.limit == rate.Inf {
			return next(c)
		}
		r := a.limits.get(principal(c).TokenID).Reserve()
		if d := r.Delay(); d > 0 {
			r.Cancel()
			secs := int(math.Ceil(d.Seconds()))
			if secs < 1 {
				secs = 1
			}
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return wgerr.New(wgerr.CodeRateLimited, "too many requests for this token; retry after %d s", secs)
		}
		return next(c)
	}
}

// bounded gives the request's database calls a deadline. Claims, which may
// long-poll, set their own deadline from wait_seconds instead.
func (a *API) bounded(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx, cancel := context.WithTimeout(c.Request().Context(), d)
			defer cancel()
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
	}
}

// noStore marks API answers as never cacheable.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		return next(c)
	}
}
