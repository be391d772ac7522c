package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestDecodeProblem(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		body := []byte(`{"type":"https://workgraph.dev/problems/dependency_cycle","title":"Dependency cycle","status":409,"detail":"would close a cycle","code":"dependency_cycle","cycle":["a","b","a"]}`)
		e := decodeProblem("POST", "/v1/x", 409, body)
		if !errors.Is(e, ErrDependencyCycle) || errors.Is(e, ErrLeaseLost) {
			t.Fatalf("errors.Is mismatch for %v", e)
		}
		var cycle []string
		if !e.Extension("cycle", &cycle) || len(cycle) != 3 {
			t.Fatalf("cycle extension = %v", cycle)
		}
		if e.Detail != "would close a cycle" || e.Status != 409 {
			t.Fatalf("decoded %+v", e)
		}
	})
	t.Run("NotAProblem", func(t *testing.T) {
		t.Parallel()
		e := decodeProblem("GET", "/v1/x", 502, []byte("<html>bad gateway</html>"))
		if !errors.Is(e, ErrUnavailable) || e.Detail != "<html>bad gateway</html>" {
			t.Fatalf("decoded %+v", e)
		}
	})
}

// TestRetryKeepsIdempotencyKey: a POST answered 503 is retried with the same
// Idempotency-Key, and a 409 is not retried.
func TestRetryKeepsIdempotencyKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	keys := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"status":409,"code":"lease_lost","title":"Lease lost","detail":"lease is gone"}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Release(context.Background(), "l1", ReleaseRequest{Epoch: 1})
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("err = %v, want lease lost", err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("calls = %d, want 2", n)
	}
	k1, k2 := <-keys, <-keys
	if k1 == "" || k1 != k2 {
		t.Fatalf("idempotency keys %q, %q: want equal and non-empty", k1, k2)
	}
}

// TestSelfIdempotentCallsSendNoKey: a heartbeat and a completion are safe to
// repeat as they are (a repeated completion is answered as a replay), so
// they spare the server an Idempotency-Key record, and are still retried.
func TestSelfIdempotentCallsSendNoKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	keys := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		if calls.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"lease":{"id":"l1"}}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(context.Background(), "l1", HeartbeatRequest{Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), "l1", CompleteRequest{Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("calls = %d, want each retried once", n)
	}
	for range 4 {
		if k := <-keys; k != "" {
			t.Fatalf("a self-idempotent call sent Idempotency-Key %q", k)
		}
	}
}
