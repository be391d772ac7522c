package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 40; attempt++ {
		step := min(retryCap, retryBase<<min(attempt-1, 20))
		var low, high bool
		for range 200 {
			d := backoff(attempt)
			if d < 0 || d > step {
				t.Fatalf("backoff(%d) = %v, want within [0, %v]", attempt, d, step)
			}
			low = low || d < step/2
			high = high || d >= step/2
		}
		if !low || !high {
			t.Fatalf("backoff(%d) is not spread over [0, %v] (full jitter)", attempt, step)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Tue, 01 Dec 2026 10:00:07 GMT": 7 * time.Second,
		"Tue, 01 Dec 2026 09:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// failing answers the first n requests with status (and a problem of
// code), then 200 {}; it counts requests and keeps their keys.
func failing(t *testing.T, n int32, status int, code, retryAfter string) (*httptest.Server, *atomic.Int32, chan string) {
	t.Helper()
	var calls atomic.Int32
	keys := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		if calls.Add(1) <= n {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			w.Write([]byte(`{"status":0,"code":"` + code + `","title":"t","detail":"d","request_id":"r-1"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, keys
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("InProgressRetriedWithTheSameKey", func(t *testing.T) {
		t.Parallel()
		srv, calls, keys := failing(t, 2, http.StatusConflict, CodeRequestInProgress, "")
		c, _ := New(srv.URL, "tok")
		if _, err := c.CreateProject(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 3 {
			t.Fatalf("calls = %d, want 3", n)
		}
		k1, k2, k3 := <-keys, <-keys, <-keys
		if k1 == "" || k1 != k2 || k2 != k3 {
			t.Fatalf("keys %q %q %q: want one key", k1, k2, k3)
		}
	})
	t.Run("OutcomeUnknownIsFinal", func(t *testing.T) {
		t.Parallel()
		srv, calls, _ := failing(t, 1, http.StatusConflict, CodeOutcomeUnknown, "")
		c, _ := New(srv.URL, "tok")
		_, err := c.CreateProject(ctx, "p")
		var ce *Error
		if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ce) || ce.RequestID() != "r-1" {
			t.Fatalf("err = %v, want outcome_unknown with its request id", err)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("calls = %d, want 1", n)
		}
	})
	t.Run("RetryAfterBeyondBudgetEndsRetries", func(t *testing.T) {
		t.Parallel()
		srv, calls, _ := failing(t, 100, http.StatusServiceUnavailable, CodeUnavailable, "60")
		c, _ := New(srv.URL, "tok")
		if _, err := c.CreateProject(ctx, "p"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("calls = %d, want 1 (Retry-After 60 s exceeds the budget)", n)
		}
	})
	t.Run("BudgetBoundsRetries", func(t *testing.T) {
		t.Parallel()
		// Retry-After: 1 makes every wait a second: a 1.5 s budget has room
		// for one retry only.
		srv, calls, _ := failing(t, 100, http.StatusServiceUnavailable, CodeUnavailable, "1")
		c, _ := New(srv.URL, "tok", WithRetryBudget(1500*time.Millisecond))
		if _, err := c.CreateProject(ctx, "p"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("calls = %d, want 2", n)
		}
	})
	t.Run("AttemptsBoundRetries", func(t *testing.T) {
		t.Parallel()
		srv, calls, _ := failing(t, 100, http.StatusBadGateway, CodeUnavailable, "")
		c, _ := New(srv.URL, "tok", WithRetries(4))
		if _, err := c.CreateProject(ctx, "p"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
		if n := calls.Load(); n != 4 {
			t.Fatalf("calls = %d, want 4", n)
		}
	})
	t.Run("ManyFailuresRiddenOut", func(t *testing.T) {
		t.Parallel()
		// Six 503s in a row (the old policy gave up after two).
		srv, calls, _ := failing(t, 6, http.StatusServiceUnavailable, CodeUnavailable, "")
		c, _ := New(srv.URL, "tok")
		if _, err := c.CreateProject(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 7 {
			t.Fatalf("calls = %d, want 7", n)
		}
	})
}

func TestRetryNotify(t *testing.T) {
	t.Parallel()
	srv, _, _ := failing(t, 2, http.StatusServiceUnavailable, CodeUnavailable, "")
	var told []Retry
	c, _ := New(srv.URL, "tok", WithRetryNotify(func(r Retry) { told = append(told, r) }))
	if _, err := c.CreateProject(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	if len(told) != 2 || told[0].Attempt != 1 || told[1].Attempt != 2 || !errors.Is(told[1].Err, ErrUnavailable) || told[0].Path != "/v1/projects" {
		t.Fatalf("told %+v, want attempts 1 and 2 of POST /v1/projects", told)
	}
}

// TestEveryWriteCarriesKey: a PATCH, PUT or DELETE carries an
// Idempotency-Key as a POST does, the same on each retry, so that a retry
// after a lost answer is answered from the first attempt's record rather
// than applied again (a second removal would be not_found); a GET carries
// none.
func TestEveryWriteCarriesKey(t *testing.T) {
	t.Parallel()
	type seen struct{ method, key string }
	got := make(chan seen, 100)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.Header.Get("Idempotency-Key")}
		if calls.Add(1)%2 == 1 { // every first attempt: a gateway error, retried
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "token", WithRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	title := "t"
	for method, call := range map[string]func() error{
		http.MethodPatch: func() error {
			_, err := c.UpdateItem(ctx, "p", "i", UpdateItemRequest{Title: &title})
			return err
		},
		http.MethodPut: func() error {
			_, err := c.SetBudget(ctx, "p", "i", BudgetRequest{})
			return err
		},
		http.MethodDelete: func() error { return c.RemoveDependency(ctx, "p", "i", "j") },
		http.MethodGet: func() error {
			_, err := c.GetItem(ctx, "p", "i")
			return err
		},
	} {
		if err := call(); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		first, retry := <-got, <-got
		if first.method != method || retry.method != method {
			t.Fatalf("%s: requests %+v, %+v", method, first, retry)
		}
		if method == http.MethodGet {
			if first.key != "" || retry.key != "" {
				t.Fatalf("GET carried Idempotency-Key %q, %q", first.key, retry.key)
			}
			continue
		}
		if first.key == "" || retry.key != first.key {
			t.Fatalf("%s: Idempotency-Key %q then %q, want one key on both attempts", method, first.key, retry.key)
		}
	}
}

// TestAbsentServerBudget: a client that has never had an answer gives up
// on a refused connection within WithAbsentServerBudget; once the server
// has answered, a refused connection is a restart, ridden out with the
// whole retry budget.
func TestAbsentServerBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("NeverAnsweredFailsFast", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ln.Close()
		c, _ := New(url, "tok", WithAbsentServerBudget(300*time.Millisecond))
		start := time.Now()
		_, err = c.CreateProject(ctx, "p")
		if !NoServer(err) || !Unreachable(err) {
			t.Fatalf("err = %v, want a refused connection", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("gave up after %s, want about 300ms", took)
		}
	})
	t.Run("AnsweredRidesOutRestart", func(t *testing.T) {
		t.Parallel()
		answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{}`))
		})
		first := httptest.NewServer(answer)
		addr := first.Listener.Addr().String()
		c, _ := New(first.URL, "tok", WithAbsentServerBudget(300*time.Millisecond))
		if _, err := c.CreateProject(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		first.Close()
		// The server comes back on the same address well after the
		// absent-server budget: the client, which was answered before,
		// waits for it.
		back := make(chan *http.Server, 1)
		go func() {
			time.Sleep(time.Second)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				back <- nil
				return
			}
			s := &http.Server{Handler: answer}
			back <- s
			s.Serve(ln)
		}()
		var refused []Retry
		c.notify = func(r Retry) { refused = append(refused, r) }
		_, err := c.CreateProject(ctx, "q")
		s := <-back
		if s == nil {
			t.Skip("the address could not be listened on again")
		}
		defer s.Close()
		if err != nil {
			t.Fatalf("through a restart: %v", err)
		}
		if len(refused) == 0 || !NoServer(refused[0].Err) {
			t.Fatalf("retries %+v, want refused connections retried", refused)
		}
	})
}
