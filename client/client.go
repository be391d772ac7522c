package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Client talks to one workgraph server with one token. It is safe for
// concurrent use.
type Client struct {
	base        *url.URL
	token       string
	http        *http.Client
	userAgent   string
	maxAttempts int
	retryFor    time.Duration
	timeout     time.Duration
	notify      func(Retry)
	// absentFor bounds the retries of a request that finds no server
	// (WithAbsentServerBudget); answered is set by the first answer.
	absentFor time.Duration
	answered  atomic.Bool
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (default: a client without a global
// timeout; each request is bounded by WithTimeout and its context).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// Retry policy defaults: a request is tried up to DefaultAttempts times
// within DefaultRetryFor (a claim's wait on top), sleeping between tries a
// random time up to an exponential step (retryBase, doubling, capped at
// retryCap: "full jitter"), or longer when the server's Retry-After says so.
const (
	DefaultAttempts = 10
	DefaultRetryFor = 30 * time.Second
	retryBase       = 100 * time.Millisecond
	retryCap        = 5 * time.Second
)

// WithRetries sets how many times a request is tried in all (default
// DefaultAttempts; 1 disables retries).
func WithRetries(attempts int) Option {
	return func(c *Client) {
		if attempts < 1 {
			attempts = 1
		}
		c.maxAttempts = attempts
	}
}

// WithRetryBudget bounds the time a request may spend retrying (default
// DefaultRetryFor): no attempt starts after d has passed since the first,
// and a Retry-After beyond it ends the retries.
func WithRetryBudget(d time.Duration) Option { return func(c *Client) { c.retryFor = d } }

// WithAbsentServerBudget bounds, to d from a request's first attempt, the
// retries of a request that finds no server at all (the connection is
// refused: nothing listens at the address; or the host name does not
// exist) while this client has never had an answer from the server: a
// wrong address or a server not started fails within d instead of the
// whole retry budget, while a server that is just starting (its listener
// is bound a moment after the process starts) is still waited for. Once
// the server has answered once, a refused connection is a server
// restarting and is retried like any transport failure. Default: no bound
// of its own (0). Timeouts, resets, 502/503/504 and 429 keep the whole
// budget either way.
func WithAbsentServerBudget(d time.Duration) Option { return func(c *Client) { c.absentFor = d } }

// Retry describes a retry about to happen, for WithRetryNotify.
type Retry struct {
	Method, Path string
	// Attempt is the number of the attempt that failed (1: the first).
	Attempt int
	// Err is why it failed; Wait is how long the client sleeps before the
	// next attempt.
	Err  error
	Wait time.Duration
}

// WithRetryNotify calls f before each retry's sleep (e.g. to tell a person
// that the server is unavailable and the client is waiting for it).
func WithRetryNotify(f func(Retry)) Option { return func(c *Client) { c.notify = f } }

// WithTimeout bounds each attempt of a request (default 30 s). A claim that
// waits for work gets its wait on top.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080") that authenticates with token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		return nil, errors.New("client: no server URL")
	}
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: server URL %q: scheme must be http or https", baseURL)
	}
	c := &Client{
		base:        u,
		token:       token,
		http:        &http.Client{},
		userAgent:   "workgraph-client",
		maxAttempts: DefaultAttempts,
		retryFor:    DefaultRetryFor,
		timeout:     30 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the server's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

// CallOption adjusts one request.
type CallOption func(*call)

type call struct {
	idempotencyKey string
	noKey          bool
	extraTimeout   time.Duration
	wrapBody       func(body io.Reader, size int64) io.Reader
}

// WithIdempotencyKey sets the Idempotency-Key of a POST (default: a fresh
// random key per call, reused by its retries).
func WithIdempotencyKey(key string) CallOption {
	return func(c *call) { c.idempotencyKey = key }
}

// WithUploadProgress wraps the request body, e.g. to report upload
// progress; size is the body's length in bytes.
func WithUploadProgress(wrap func(body io.Reader, size int64) io.Reader) CallOption {
	return func(c *call) { c.wrapBody = wrap }
}

// selfIdempotent marks a POST that is safe to repeat as it is, so it
// needs no Idempotency-Key (and spares the server recording one): a
// heartbeat only extends the lease again, and an identical repeat of a
// completion is answered as a replay.
func selfIdempotent() CallOption {
	return func(c *call) { c.noKey = true }
}

func withExtraTimeout(d time.Duration) CallOption {
	return func(c *call) { c.extraTimeout = d }
}

// do sends one API request: in (if not nil) as the JSON body, out (if not
// nil) decoded from a 2xx answer. It returns the answer's status.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any, opts ...CallOption) (int, error) {
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("client: encode %s %s: %w", method, path, err)
		}
	}
	if method != http.MethodGet && cl.idempotencyKey == "" && !cl.noKey {
		cl.idempotencyKey = newKey()
	}
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()

	ctx, span := startCall(ctx, method, path)
	attempts, status, err := c.retry(ctx, method, u.String(), path, body, out, &cl)
	endCall(span, attempts, status, err)
	return status, err
}

// retry sends a request until an attempt succeeds, fails for good, or
// the retry budget is spent; it returns how many attempts it made.
func (c *Client) retry(ctx context.Context, method, rawURL, path string, body []byte, out any, cl *call) (int, int, error) {
	start := time.Now()
	budget := c.retryFor + cl.extraTimeout
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := c.attempt(ctx, method, rawURL, path, body, out, cl)
		if err == nil {
			return attempt, status, nil
		}
		if attempt >= c.maxAttempts || !retryable(status, err) || ctx.Err() != nil {
			return attempt, status, err
		}
		wait := max(backoff(attempt), retryAfter)
		if c.absentFor > 0 && !c.answered.Load() && NoServer(err) {
			budget = min(budget, c.absentFor)
		}
		if time.Since(start)+wait > budget {
			return attempt, status, err
		}
		if c.notify != nil {
			c.notify(Retry{Method: method, Path: path, Attempt: attempt, Err: err, Wait: wait})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return attempt, status, err
		case <-t.C:
		}
	}
}

// backoff is the sleep before retry number attempt (1 = the first retry):
// uniformly random in [0, min(retryCap, retryBase * 2^(attempt-1))].
func backoff(attempt int) time.Duration {
	step := retryCap
	if attempt <= 20 {
		step = min(retryCap, retryBase<<(attempt-1))
	}
	return mrand.N(step + 1)
}

func (c *Client) attempt(ctx context.Context, method, rawURL, path string, body []byte, out any, cl *call) (status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.extraTimeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
		if cl.wrapBody != nil {
			r = cl.wrapBody(r, int64(len(body)))
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, r)
	if err != nil {
		return 0, 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.ContentLength = int64(len(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if cl.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", cl.idempotencyKey)
	}
	injectTrace(ctx, req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	c.answered.Store(true)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return resp.StatusCode, 0, fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	if len(data) > maxAnswerBytes {
		return resp.StatusCode, 0, fmt.Errorf("client: %s %s: the answer is larger than %d MiB, more than any the server gives", method, path, maxAnswerBytes>>20)
	}
	if resp.StatusCode >= 300 {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return resp.StatusCode, retryAfter, decodeProblem(method, path, resp.StatusCode, data)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, 0, fmt.Errorf("client: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, 0, nil
}

// maxAnswerBytes bounds the answer the client reads. The largest the
// server gives is a plan import's: a body of up to 16 MiB whose titles
// JSON may write in six bytes a character ("\u003c"), plus every item's id,
// about 100 MiB at worst.
const maxAnswerBytes = 256 << 20

// retryable: transport failures, gateway errors, an unavailable server or
// database, rate limiting, and a first attempt still in progress (409
// request_in_progress). Every write carries an Idempotency-Key or is safe to
// repeat by itself (selfIdempotent: fenced by its lease and epoch, it
// applied once or not at all), so a retry never applies twice. Refusals
// (lease_lost, conflict, ...) are final.
func retryable(status int, err error) bool {
	switch status {
	case 0:
		return !errors.Is(err, context.Canceled)
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		return errors.Is(err, ErrRequestInProgress)
	}
	return false
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (relative to now); 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }
