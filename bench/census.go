package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/workgraph-dev/workgraph/server"
)

// The statement census counts how many statements PostgreSQL receives for
// one claim, heartbeat and complete sent through the REST API: a second
// in-process server talks to the database through pgProxy, which counts
// the protocol's Execute ('E') and simple Query ('Q') messages
// (statements), and its Sync ('S') and simple Query messages (round trips:
// a pipelined batch is several Executes and one Sync).

// pgProxy forwards connections to a PostgreSQL server and counts the
// statements clients send.
type pgProxy struct {
	ln      net.Listener
	network string
	target  string
	stmts   atomic.Int64
	trips   atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func startProxy(network, target string) (*pgProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &pgProxy{ln: ln, network: network, target: target}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *pgProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial(p.network, p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(c, s); c.Close() }()
		go func() { p.forward(c, s); s.Close() }()
	}
}

// forward copies client messages to the server, counting statements. The
// first message (startup, or a cancel request) has no type byte.
func (p *pgProxy) forward(c, s net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return
	}
	n := int(binary.BigEndian.Uint32(hdr[:4]))
	if n < 4 || !copyMsg(r, s, hdr[:4], n-4) {
		return
	}
	for {
		if _, err := io.ReadFull(r, hdr[:5]); err != nil {
			return
		}
		if hdr[0] == 'E' || hdr[0] == 'Q' {
			p.stmts.Add(1)
		}
		if hdr[0] == 'S' || hdr[0] == 'Q' {
			p.trips.Add(1)
		}
		n := int(binary.BigEndian.Uint32(hdr[1:5]))
		if n < 4 || !copyMsg(r, s, hdr[:5], n-4) {
			return
		}
	}
}

func copyMsg(r *bufio.Reader, w io.Writer, hdr []byte, body int) bool {
	buf := make([]byte, len(hdr)+body)
	copy(buf, hdr)
	if _, err := io.ReadFull(r, buf[len(hdr):]); err != nil {
		return false
	}
	_, err := w.Write(buf)
	return err == nil
}

func (p *pgProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// restStatements returns, for the Go client ("rest") and bare net/http
// ("rest-raw") agents, the least number of statements the server sends
// for a claim, a heartbeat and a complete.
func restStatements(ctx context.Context, e *env) (map[string]map[string]float64, error) {
	u, err := url.Parse(e.url)
	if err != nil {
		return nil, err
	}
	if u.Query().Get("sslmode") != "disable" {
		return nil, fmt.Errorf("the census proxy needs sslmode=disable in the database URL")
	}
	// TCP host:port, or the unix socket of a host=/dir parameter (the
	// embedded cluster's URL).
	network, target := "tcp", u.Host
	q := u.Query()
	if dir := q.Get("host"); strings.HasPrefix(dir, "/") {
		port := q.Get("port")
		if port == "" {
			port = "5432"
		}
		network, target = "unix", dir+"/.s.PGSQL."+port
		q.Del("host")
		q.Del("port")
	}
	if target == "" {
		return nil, fmt.Errorf("the database URL names no server to proxy")
	}
	proxy, err := startProxy(network, target)
	if err != nil {
		return nil, err
	}
	defer proxy.close()
	pu := *u
	pu.Host = proxy.ln.Addr().String()
	pu.RawQuery = q.Encode()
	tok := randomToken()
	srv, err := server.Start(ctx, server.Config{
		DatabaseURL:    withPoolSize(pu.String(), 2),
		Addr:           "127.0.0.1:0",
		BootstrapToken: tok,
		Logger:         slog.New(slog.DiscardHandler),
		RateLimit:      -1,
		// No webhook deliverer: it looks for work every 50 ms, and on a
		// loaded machine its statements fell into every cycle's window
		// of a step (trips_claim 3 where the claim takes 2).
		Webhooks: server.WebhooksConfig{Off: true},
	})
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown(context.WithoutCancel(ctx))
	s, err := newBenchServer(srv.URL(), tok)
	if err != nil {
		return nil, err
	}
	const cycles = 9
	out := map[string]map[string]float64{}
	for _, raw := range []bool{false, true} {
		project, err := s.restProject(ctx, e.newProjectName("census"))
		if err != nil {
			return nil, err
		}
		agents, err := s.restAgents(ctx, project, 1, raw)
		if err != nil {
			return nil, err
		}
		if err := loadReady(ctx, e.pool, project, cycles, 0); err != nil {
			return nil, err
		}
		a := agents[0]
		counts := map[string][]int64{}
		count := func(step string, fn func() error) error {
			before, trips := proxy.stmts.Load(), proxy.trips.Load()
			err := fn()
			counts[step] = append(counts[step], proxy.stmts.Load()-before)
			tripStep := "trips_" + strings.TrimPrefix(step, "stmts_")
			counts[tripStep] = append(counts[tripStep], proxy.trips.Load()-trips)
			return err
		}
		for i := 0; i < cycles; i++ {
			var l heldLease
			if err := count("stmts_claim", func() (err error) { l, err = a.claim(ctx); return err }); err != nil {
				return nil, err
			}
			if err := count("stmts_heartbeat", func() error { return a.heartbeat(ctx, l) }); err != nil {
				return nil, err
			}
			if err := count("stmts_complete", func() error { return a.complete(ctx, l) }); err != nil {
				return nil, err
			}
		}
		name := "rest"
		if raw {
			name = "rest-raw"
		}
		out[name] = map[string]float64{}
		for step, v := range counts {
			sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
			// The least over the cycles: the proxy also counts what
			// the server's background services send meanwhile, which
			// only ever adds (a loaded machine stretches a step over
			// several of their rounds).
			out[name][step] = float64(v[0])
		}
	}
	return out, nil
}
