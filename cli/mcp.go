package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/mcp"
	"github.com/workgraph-dev/workgraph/telemetry"
)

func init() { extraCommands = append(extraCommands, newMCPCmd) }

// mcpOptions are the flags of `workgraph mcp`.
type mcpOptions struct {
	conn           clientFlags
	worker         string
	leaseSeconds   int
	httpAddr       string
	sessionTimeout time.Duration
	allowOrigins   []string
	allowRemote    bool
}

func newMCPCmd(stdio IO) *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve workgraph's agent tools over MCP (stdio, or streamable HTTP with --http)",
		Long: `Serve workgraph to an AI agent over the Model Context Protocol.

By default the server speaks MCP on stdin/stdout: register "workgraph mcp" as
a stdio MCP server in the agent. With --http 127.0.0.1:PORT it serves
streamable HTTP at http://127.0.0.1:PORT/mcp instead; each MCP session holds
its own task. The endpoint asks for no credentials and every session acts
with WORKGRAPH_TOKEN, so --http takes a loopback address (127.0.0.1, [::1],
localhost); another one (0.0.0.0 in a container, say) only with
--allow-remote, when something else in front of it decides who may call.

Each MCP session holds at most one task. The session keeps the lease id and
epoch itself and heartbeats in the background; a session that ends releases
its task.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd.Context(), stdio, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.conn.url, "url", "", "server URL (env WORKGRAPH_URL; default "+DefaultURL+")")
	f.StringVar(&o.conn.token, "token", "", "API token, role agent (env WORKGRAPH_TOKEN)")
	f.StringVarP(&o.conn.project, "project", "p", "", "project name (env WORKGRAPH_PROJECT; default \"default\")")
	f.StringVar(&o.conn.config, "config", "", "config file (env WORKGRAPH_CONFIG; default ~/.config/workgraph/config.yaml or .json)")
	addRetriesFlag(f, &o.conn.retries)
	f.StringVar(&o.worker, "worker", "", "worker label of the claims (env WORKGRAPH_WORKER; default mcp@<host>)")
	f.IntVar(&o.leaseSeconds, "lease-seconds", 0, "lease TTL asked for on each claim (0: the server's default)")
	f.StringVar(&o.httpAddr, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8090) instead of stdio")
	f.StringSliceVar(&o.allowOrigins, "allow-origin", nil, "with --http: a browser origin (e.g. https://app.example) besides loopback ones that may call the server; repeatable")
	f.DurationVar(&o.sessionTimeout, "session-timeout", time.Hour, "with --http: close (and release the task of) a session idle this long")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "with --http: serve on an address that is not loopback (anyone who reaches it acts with the token)")
	return cmd
}

// check refuses flags that are out of range before anything starts.
func (o mcpOptions) check() error {
	switch {
	case o.leaseSeconds < 0:
		return usageError("--lease-seconds %d: must not be negative (0: the server's default)", o.leaseSeconds)
	case o.sessionTimeout < 0:
		return usageError("--session-timeout %s: a duration must not be negative", o.sessionTimeout)
	case o.httpAddr == "" || o.allowRemote:
		return nil
	}
	host, _, err := net.SplitHostPort(o.httpAddr)
	if err != nil {
		return usageError("--http %q: %v", o.httpAddr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError("--http %q is not a loopback address (127.0.0.1, [::1] or localhost): the endpoint asks for no credentials "+
			"and acts with this token for whoever reaches it; give --allow-remote if something in front of it decides who may call", o.httpAddr)
	}
	return nil
}

func runMCP(ctx context.Context, stdio IO, o mcpOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	cfg, err := loadConfig(o.conn, os.Getenv)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	c, err := cfg.newClient(stdio)
	if err != nil {
		return err
	}
	worker := o.worker
	if worker == "" {
		worker = cfg.Worker
		if cfg.Source["worker"] == "default" {
			worker = "mcp@" + worker
		}
	}
	tr, err := setupTracing(ctx, "workgraph-mcp", logger(stdio.Err))
	if err != nil {
		return err
	}
	defer tr.shutdown()
	var tracer trace.Tracer
	if tr.Enabled() {
		tracer = tr.Tracer("mcp")
	}
	// Logs go to stderr: on stdio, stdout carries the protocol.
	srv, err := mcp.New(mcp.Config{
		Client: c, Project: cfg.Project, Worker: worker, LeaseSeconds: o.leaseSeconds,
		SessionTimeout: o.sessionTimeout, AllowedOrigins: o.allowOrigins, Version: buildinfo.Get().Short(), Logger: logger(stdio.Err),
		Tracer: tracer, Parent: trace.SpanContextFromContext(telemetry.FromEnv(ctx, os.Getenv)),
	})
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if o.httpAddr == "" {
		return srv.Serve(ctx, &mcp.StdioTransport{Reader: stdio.In, Writer: stdio.Out, Logger: logger(stdio.Err)})
	}
	return serveMCPHTTP(ctx, stdio, srv, o.httpAddr)
}

// serveMCPHTTP serves srv's streamable HTTP handler at /mcp until ctx ends.
func serveMCPHTTP(ctx context.Context, stdio IO, srv *mcp.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdio.Err, "workgraph MCP endpoint: http://%s/mcp\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		srv.Close()
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close()
	return hs.Shutdown(shutdownCtx)
}
