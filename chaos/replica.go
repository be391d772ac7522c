package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// replica is one `workgraph serve` process.
type replica struct {
	idx   int
	addr  string
	args  []string
	bin   string
	logTo string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts the process and waits until it answers /readyz.
func (r *replica) start(ctx context.Context) error {
	f, err := os.OpenFile(r.logTo, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, r.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group (a Ctrl-C of the suite reaches the suite only,
	// which then stops it), and killed by the kernel if the suite dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if ready(ctx, r.url()) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("replica %d exited at start (log: %s)", r.idx, r.logTo)
		case <-ctx.Done():
			return fmt.Errorf("replica %d not ready within 60 s (log: %s)", r.idx, r.logTo)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *replica) url() string { return "http://" + r.addr }

func (r *replica) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Signal(sig)
	}
}

// kill is the fault: SIGKILL, and wait for the process to be gone.
func (r *replica) kill() {
	r.signal(syscall.SIGKILL)
	r.wait(10 * time.Second)
}

func (r *replica) wait(d time.Duration) bool {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// running reports whether the process has not exited.
func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// stop ends the process on every exit path: SIGCONT (it may be stopped),
// SIGTERM, then SIGKILL.
func (r *replica) stop() {
	r.signal(syscall.SIGCONT)
	r.signal(syscall.SIGTERM)
	if !r.wait(5 * time.Second) {
		r.kill()
	}
}

var probe = &http.Client{Timeout: time.Second}

// ready reports whether a replica answers /readyz with 200.
func ready(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := probe.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
