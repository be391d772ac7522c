package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/webhook"
)

// sideServer is a listener of its own beside the main one: /metrics on
// Config.MetricsAddr, pprof on Config.PprofAddr.
type sideServer struct {
	name string
	ln   net.Listener
	http *http.Server
}

// bindSide binds the side listeners (before anything else starts, like
// the main one, so a busy or forbidden address fails at once).
func (s *Server) bindSide() error {
	if a := s.cfg.PprofAddr; a != "" {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("server: pprof address %q: %w", a, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("server: pprof address %q is not a loopback address (127.0.0.1, [::1] or localhost): profiles expose the process's memory", a)
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("server: listen for pprof on %s: %w", a, err)
		}
		s.side = append(s.side, &sideServer{name: "pprof", ln: ln})
	}
	if a := s.cfg.MetricsAddr; a != "" {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("server: listen for metrics on %s: %w", a, err)
		}
		s.side = append(s.side, &sideServer{name: "metrics", ln: ln})
	}
	return nil
}

// setupMetrics makes the registry: the Go runtime and process, the build,
// the database pools, the census and the counters of package metrics.
func (s *Server) setupMetrics() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := buildinfo.Get()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "build_info",
		Help: "Always 1; its labels name the running build."}, []string{"version", "commit", "go_version"})
	build.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	reg.MustRegister(build)
	pool := s.pool
	reg.MustRegister(metrics.NewPoolCollector("main", poolStats(pool)))
	reg.MustRegister(metrics.NewCensusCollector(func(ctx context.Context) (db.Census, error) {
		return db.TakeCensus(ctx, pool)
	}, s.cfg.CensusInterval, s.log))
	s.registry = reg
	s.metrics = metrics.New(reg)
}

// poolStats reads pool's statistics for a metrics.PoolCollector.
func poolStats(pool *pgxpool.Pool) func() metrics.PoolStats {
	return func() metrics.PoolStats {
		st := pool.Stat()
		return metrics.PoolStats{Max: st.MaxConns(), Total: st.TotalConns(), Idle: st.IdleConns(),
			Acquired: st.AcquiredConns(), Constructing: st.ConstructingConns(),
			Acquires: st.AcquireCount(), EmptyAcquires: st.EmptyAcquireCount(), CanceledAcquires: st.CanceledAcquireCount(),
			AcquireDuration: st.AcquireDuration(), EmptyAcquireWait: st.EmptyAcquireWaitTime()}
	}
}

// metricsHandler answers a scrape.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)})
}

// instrument names every request (API or UI) with its request id (the
// X-Request-Id answer header, and the context every log line of the
// request is logged with), and counts it by its route pattern, method and
// status. An error is answered here (by the error handlers) so that its
// status is the one counted.
//
// With tracing on (Config.Tracing), each request is also a server span
// named by its method and route template, a child of the caller's W3C
// traceparent when it sent one; its context carries the span to the
// handlers (which tag it with the project, item, lease and epoch) and to
// the database transactions below them.
func (s *Server) instrument(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		method := knownMethod(req.Method)
		id := logs.AcceptRequestID(req.Header.Get(api.RequestIDHeader))
		ctx := logs.WithRequestID(req.Context(), id)
		var span trace.Span
		if s.tracer != nil {
			ctx, span = telemetry.StartRequest(ctx, s.tracer, req.Header, method, c.Path(), id)
		}
		// The client address (the peer, or the client a trusted proxy
		// names) is resolved once: the throttle and the log read it.
		c.SetRequest(auth.WithClient(req.WithContext(ctx), s.cfg.TrustedProxies))
		c.Response().Header().Set(api.RequestIDHeader, id)
		if err := next(c); err != nil {
			c.Error(err)
		}
		if span != nil {
			telemetry.EndRequest(span, c.Response().Status)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		s.metrics.Request(route, method, c.Response().Status, time.Since(start))
		return nil
	}
}

// knownMethod is an HTTP method as metrics and spans name it: one of
// the standard methods, else "_OTHER" (OpenTelemetry's name), so a client
// inventing methods cannot add series or span names without bound.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return telemetry.OtherMethod
}

// serveSide starts serving the side listeners; Shutdown stops them.
func (s *Server) serveSide() {
	for _, side := range s.side {
		mux := http.NewServeMux()
		switch side.name {
		case "metrics":
			mux.Handle("/metrics", s.metricsHandler())
		case "pprof":
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		side.http = &http.Server{Handler: mux, ReadHeaderTimeout: HeaderReadTimeout, IdleTimeout: IdleTimeout,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
		go func(side *sideServer) {
			if err := side.http.Serve(side.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("serving "+side.name, "addr", side.ln.Addr().String(), "err", err)
			}
		}(side)
		s.log.Info("serving "+side.name, "addr", side.ln.Addr().String())
	}
}

// closeSide stops the side listeners.
func (s *Server) closeSide() {
	for _, side := range s.side {
		if side.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = side.http.Shutdown(ctx)
			cancel()
		} else {
			side.ln.Close()
		}
	}
	s.side = nil
}

// MetricsURL is where /metrics answers: the metrics listener, else the
// main one when Config.MetricsOnMain, else "".
func (s *Server) MetricsURL() string {
	for _, side := range s.side {
		if side.name == "metrics" {
			return "http://" + side.ln.Addr().String() + "/metrics"
		}
	}
	if s.cfg.MetricsOnMain {
		return s.URL() + "/metrics"
	}
	return ""
}

// PprofURL is the base of the pprof handlers (".../debug/pprof/"), or "".
func (s *Server) PprofURL() string {
	for _, side := range s.side {
		if side.name == "pprof" {
			return "http://" + side.ln.Addr().String() + "/debug/pprof/"
		}
	}
	return ""
}

// observeDelivery counts a webhook delivery attempt by its result.
func (s *Server) observeDelivery(a webhook.Attempt) {
	// A released attempt's latency is the time until the stop cut it, not
	// the receiver's: it is not observed.
	s.metrics.Delivery(deliveryResult(a), a.Sent && !a.Released, a.Latency, a.Disabled, a.Paused)
}

// deliveryResult is the metrics result of an attempt.
func deliveryResult(a webhook.Attempt) string {
	switch {
	case a.Released:
		return metrics.DeliveryReleased
	case a.State == "":
		return metrics.DeliveryLost
	case a.Refused:
		return metrics.DeliveryRefused
	case a.State == webhook.StateDelivered:
		return metrics.DeliveryDelivered
	case a.State == webhook.StatePending:
		return metrics.DeliveryRetry
	case a.State == webhook.StateFailed:
		return metrics.DeliveryFailed
	}
	return metrics.DeliveryLost
}
