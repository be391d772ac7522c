package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// recorder keeps every operation of a scenario.
type recorder struct {
	mu  sync.Mutex
	ops []check.Op
}

func (r *recorder) add(op check.Op) {
	r.mu.Lock()
	op.ID = len(r.ops) + 1
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) all() []check.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]check.Op(nil), r.ops...)
}

// caller sends the suite's requests: raw HTTP, so that every attempt is
// seen and recorded exactly as sent.
type caller struct {
	replicas []string // base URLs
	token    string
	http     *http.Client
	// retryFor bounds the retries of one operation whose outcome is not
	// known yet (transport error, 5xx, 429, a key still being processed).
	retryFor time.Duration
}

func newKey() string {
	b := make([]byte, 12)
	crand.Read(b)
	return hex.EncodeToString(b)
}

type problem struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// call performs op: POSTs carry op.Key as Idempotency-Key, and every retry
// (to the next replica, with capped backoff and jitter) sends the same key
// and body, as the project's Go client does. It fills op's attempts and
// answer, decodes a 2xx body into out, and returns the final status.
func (c *caller) call(ctx context.Context, rng *rand.Rand, replica int, op *check.Op, method, path string, body any, out any) int {
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	op.Invoke = time.Now()
	deadline := op.Invoke.Add(c.retryFor)
	backoff := 50 * time.Millisecond
	uncertain := false // an attempt may have taken effect unseen
	for attempt := 0; ; attempt++ {
		r := (replica + attempt) % len(c.replicas)
		a, respBody := c.attempt(ctx, r, op.Key, method, path, payload)
		op.Attempts = append(op.Attempts, a)
		op.Return = a.At
		final := false
		switch {
		case a.Status >= 200 && a.Status < 300:
			op.Answer, op.Code = check.Acked, ""
			if out != nil && len(respBody) > 0 {
				json.Unmarshal(respBody, out)
			}
			final = true
		case a.Status == 429 || a.Status >= 500 || a.Status == 0:
		case a.Status == 409 && (a.Code == "request_in_progress" ||
			a.Code == "conflict" && (strings.Contains(a.Detail, "still being processed") || strings.Contains(a.Detail, "contended"))):
			// The key's first request is still running (or its owner died):
			// this answer does not speak for the operation.
		case a.Status == 409 && a.Code == "outcome_unknown":
			// The key's first request took effect and its answer was lost:
			// it will not run again, and what it answered is not known.
			op.Answer, op.Code = check.Unknown, a.Code
			return a.Status
		case a.Status == 409 && uncertain:
			// A refusal after an attempt whose fate is unknown may be the
			// consequence of that attempt (a lease it ended, a completion
			// it stored): the operation's outcome stays unknown.
			op.Answer, op.Code = check.Unknown, a.Code
			return a.Status
		default:
			op.Answer, op.Code = check.Refused, a.Code
			final = true
		}
		if a.Status == 0 || a.Status >= 500 {
			uncertain = true
		}
		if final {
			return a.Status
		}
		// Not known yet: retry while the budget lasts.
		op.Answer, op.Code = check.Unknown, a.Code
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return a.Status
		}
		sleep := backoff/2 + time.Duration(rng.Int64N(int64(backoff)))
		select {
		case <-ctx.Done():
			return a.Status
		case <-time.After(sleep):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (c *caller) attempt(ctx context.Context, r int, key, method, path string, payload []byte) (check.Attempt, []byte) {
	a := check.Attempt{Replica: r}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, method, c.replicas[r]+path, rd)
	if err != nil {
		a.At = time.Now()
		return a, nil
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		a.At = time.Now()
		return a, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	a.At = time.Now()
	if err != nil {
		// The status arrived, the body did not: nothing is known.
		return a, nil
	}
	a.Status = resp.StatusCode
	if resp.StatusCode >= 400 {
		var p problem
		json.Unmarshal(b, &p)
		a.Code, a.Detail = p.Code, p.Detail
	}
	return a, b
}
