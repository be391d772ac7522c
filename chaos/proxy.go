package main

import (
	"net"
	"sync"
	"time"
)

// linkProxy is the suite's TCP proxy between one replica and the database:
// it can delay every chunk, stall the link (hold all data), and cut it
// (close every connection and refuse new ones).
type linkProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	delay   time.Duration
	stalled chan struct{} // non-nil while stalled; closed to resume
	cut     bool
	conns   map[net.Conn]struct{}
}

func startProxy(listen, target string) (*linkProxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

func (p *linkProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		go p.serve(c)
	}
}

func (p *linkProxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client) }()
	go func() { defer wg.Done(); p.pipe(client, server) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, applying the current delay and
// stall; either side failing closes both.
func (p *linkProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			delay, stalled := p.delay, p.stalled
			p.mu.Unlock()
			if stalled != nil {
				<-stalled
			}
			if delay > 0 {
				time.Sleep(delay)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed link: both sides close
		}
	}
}

func (p *linkProxy) setDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

func (p *linkProxy) stall() {
	p.mu.Lock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
	p.mu.Unlock()
}

// cutLink closes every proxied connection and refuses new ones until heal.
func (p *linkProxy) cutLink() {
	p.mu.Lock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// heal removes every fault.
func (p *linkProxy) heal() {
	p.mu.Lock()
	p.delay, p.cut = 0, false
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
	p.mu.Unlock()
}

func (p *linkProxy) close() {
	p.heal()
	p.ln.Close()
	p.cutLink()
}
