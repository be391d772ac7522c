package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/client"
)

// Config is what the MCP server needs.
type Config struct {
	// Client talks to the workgraph server, with an agent (or admin) token.
	Client *client.Client
	// Project is the project whose tasks the tools see (name or id, as the
	// API accepts it).
	Project string
	// Worker is the worker label of the claims this server makes. A stable
	// label lets an agent that asked a person get its task back first.
	Worker string
	// LeaseSeconds is the lease TTL asked for on each claim; 0 lets the
	// workgraph server choose. The session heartbeats at a third of it.
	LeaseSeconds int
	// SessionTimeout closes a streamable HTTP session (releasing its task)
	// after this long without a request; 0 means one hour.
	SessionTimeout time.Duration
	// AllowedOrigins are the browser origins (e.g. "https://app.example")
	// besides loopback ones whose pages may call the streamable HTTP
	// transport. Requests without an Origin header (MCP clients that are
	// not browsers) are always served.
	AllowedOrigins []string
	// Version is reported to MCP clients.
	Version string
	Logger  *slog.Logger
	// Tracer, when set, makes a span of every tool call; Parent, when
	// valid, is the parent of the calls whose request names none (the
	// TRACEPARENT the process was started with). The calls the tools make
	// to workgraph carry the call's trace context either way.
	Tracer trace.Tracer
	Parent trace.SpanContext
}

// instructions are sent to the client at initialization.
const instructions = "workgraph hands out tasks. Loop: take_task, do the work, report_progress now and then, " +
	"then finish_task (or fail_task, release_task, split_task, ask_person). " +
	"If a tool says your lease is lost, stop working on that task and take the next one."

// Server is the MCP server. One Server serves any number of MCP sessions;
// each session holds at most one lease.
type Server struct {
	cfg Config
	api backend
	log *slog.Logger
	mcp *sdk.Server

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
	ending   sync.WaitGroup

	// heartbeatPaused stops background heartbeats (tests only).
	heartbeatPaused atomic.Bool
}

// New returns an MCP server for cfg.Project on the workgraph server that
// cfg.Client talks to.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("mcp: no workgraph client")
	}
	if cfg.Project == "" {
		return nil, errors.New("mcp: no project (set WORKGRAPH_PROJECT or --project)")
	}
	return newServer(cfg, &apiClient{c: cfg.Client, project: cfg.Project}), nil
}

func newServer(cfg Config, api backend) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Worker == "" {
		cfg.Worker = "mcp"
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = time.Hour
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, api: api, log: cfg.Logger, sessions: make(map[*sdk.ServerSession]*session)}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "workgraph", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(cfg.Logger),
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	s.addTools(s.mcp)
	return s
}

// MCP is the underlying SDK server, for connecting a transport directly
// (tests use an in-memory transport).
func (s *Server) MCP() *sdk.Server { return s.mcp }

// Serve serves one MCP session over t (stdio in the binary) until the
// client disconnects or ctx ends, then releases the session's task, if any.
func (s *Server) Serve(ctx context.Context, t sdk.Transport) error {
	err := s.mcp.Run(ctx, t)
	s.Close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Handler serves MCP sessions over streamable HTTP. Each HTTP session is an
// MCP session with its own lease. A request carrying an Origin header that
// is neither a loopback origin nor one of Config.AllowedOrigins is refused
// with 403, as the MCP specification requires: otherwise any web page a
// person opens could drive the agent's token (through DNS rebinding, even
// on a loopback address).
func (s *Server) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp },
		&sdk.StreamableHTTPOptions{SessionTimeout: s.cfg.SessionTimeout, Logger: sdkLogger(s.log)})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o) {
			s.log.Warn("refused an MCP request from a foreign origin", "origin", o)
			http.Error(w, "forbidden: origin "+strconv.Quote(o)+" may not use this MCP server", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a browser page of origin may call the
// server: a configured origin, or http(s) on a loopback host.
func (s *Server) originAllowed(origin string) bool {
	if slices.Contains(s.cfg.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Close ends every session's hold on its task (releasing the tasks that are
// still held) and waits until that is done.
func (s *Server) Close() {
	s.mu.Lock()
	open := s.sessions
	s.sessions = make(map[*sdk.ServerSession]*session)
	s.mu.Unlock()
	for ss, sess := range open {
		sess.end()
		_ = ss.Close()
	}
	s.ending.Wait()
}

// session returns the state of an MCP session, creating it on first use.
// The state is dropped, and its task released, when the session ends.
func (s *Server) session(ss *sdk.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[ss]; ok {
		return sess
	}
	sess := &session{srv: s, id: ss.ID()}
	s.sessions[ss] = sess
	s.ending.Add(1)
	go func() {
		defer s.ending.Done()
		_ = ss.Wait()
		s.mu.Lock()
		_, live := s.sessions[ss]
		delete(s.sessions, ss)
		s.mu.Unlock()
		if live {
			sess.end()
		}
	}()
	return sess
}

// sdkLogger passes on the SDK's warnings and errors only: its info logs
// (every session connecting) are noise on an agent's stderr.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{Handler: l.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
