package web

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestErrorPages: every error kind a handler can return gets the page and
// status the API answers it with (one mapping, wgerr.HTTPStatus); only an
// internal error is logged as a failure. 429 and 503 pages say when to
// come back (Retry-After).
func TestErrorPages(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err        error
		status     int
		retryAfter bool
		body       string
	}{
		"NotFound":     {wgerr.New(wgerr.CodeNotFound, "no such item"), http.StatusNotFound, false, "no such item"},
		"Invalid":      {wgerr.InvalidField("title", "must not be empty"), http.StatusBadRequest, false, "must not be empty"},
		"Forbidden":    {wgerr.New(wgerr.CodeForbidden, "not yours"), http.StatusForbidden, false, "not yours"},
		"Conflict":     {wgerr.New(wgerr.CodeConflict, "already ended"), http.StatusConflict, false, "already ended"},
		"LeaseLost":    {wgerr.New(wgerr.CodeLeaseLost, "the lease has ended"), http.StatusConflict, false, "the lease has ended"},
		"InProgress":   {wgerr.New(wgerr.CodeInProgress, "still running"), http.StatusConflict, false, "still running"},
		"RateLimited":  {wgerr.New(wgerr.CodeRateLimited, "too many requests"), http.StatusTooManyRequests, true, "too many requests"},
		"Unavailable":  {&wgerr.Error{Code: wgerr.CodeUnavailable, Message: "database down", Err: errors.New("dial tcp: refused")}, http.StatusServiceUnavailable, true, "Try again in a moment"},
		"TooLarge":     {wgerr.New(wgerr.CodePayloadTooLarge, "too big"), http.StatusRequestEntityTooLarge, false, "too big"},
		"Internal":     {errors.New("secret cause"), http.StatusInternalServerError, false, "Something went wrong"},
		"InternalKind": {&wgerr.Error{Code: wgerr.CodeInternal, Message: "secret table"}, http.StatusInternalServerError, false, "Something went wrong"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			u := &ui{Deps: Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil))}}
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/p/acme/items", nil), rec)
			r := &req{Context: c, ui: u}
			if err := r.error(tt.err); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tt.retryAfter {
				t.Fatalf("Retry-After %q, want present: %v", rec.Header().Get("Retry-After"), tt.retryAfter)
			}
			if !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("page without %q:\n%s", tt.body, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "secret") {
				t.Fatalf("internals shown: %s", rec.Body)
			}
			logged := strings.Contains(logs.String(), "level=ERROR")
			if want := tt.status == http.StatusInternalServerError; logged != want {
				t.Fatalf("logged as an error: %v, want %v: %s", logged, want, logs.String())
			}
		})
	}
}
