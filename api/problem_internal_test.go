package api

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestUnknownErrorsHideInternals(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"Plain":    errors.New("pq: password authentication failed for user secret"),
		"Internal": &wgerr.Error{Code: wgerr.CodeInternal, Message: "secret table missing", Err: errors.New("secret cause")},
		"Wrapped":  fmt.Errorf("handler: %w", errors.New("secret")),
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			e := echo.New()
			rec := httptest.NewRecorder()
			c := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/x", nil), rec)
			writeProblem(c, slog.New(slog.NewTextHandler(&logs, nil)), err)
			if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
				t.Fatalf("answer %d %s", rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "secret") {
				t.Fatalf("internals leaked: %s", rec.Body)
			}
			if !strings.Contains(logs.String(), "secret") {
				t.Fatalf("cause not logged: %s", logs.String())
			}
		})
	}
}

func TestProblemExtras(t *testing.T) {
	t.Parallel()
	err := &wgerr.Error{Code: wgerr.CodeDependencyCycle, Message: "dependency cycle: a -> b -> a",
		Details: map[string]any{"cycle": []string{"a", "b", "a"}, "code": "overridden?"}}
	p, logged := problemFor(err)
	if logged || p.Status != 409 || p.Code != wgerr.CodeDependencyCycle {
		t.Fatalf("problem %+v", p)
	}
	body, _ := p.MarshalJSON()
	if !strings.Contains(string(body), `"cycle":["a","b","a"]`) || !strings.Contains(string(body), `"code":"dependency_cycle"`) {
		t.Fatalf("body %s", body)
	}
}

func TestRequestLevel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		took   time.Duration
		want   slog.Level
	}{
		{http.StatusOK, time.Millisecond, slog.LevelDebug},
		{http.StatusCreated, 2 * time.Second, slog.LevelInfo},
		{http.StatusConflict, time.Millisecond, slog.LevelInfo},
		{http.StatusNotFound, time.Millisecond, slog.LevelInfo},
		{http.StatusInternalServerError, time.Millisecond, slog.LevelError},
	} {
		if got := requestLevel(c.status, c.took); got != c.want {
			t.Errorf("requestLevel(%d, %v) = %v, want %v", c.status, c.took, got, c.want)
		}
	}
}

// TestUnknownErrorsTranslated: an error of no kind that reached a handler
// goes through Config.TranslateUnknown (db.Translate in the server), so a
// lost connection no service translated is 503 unavailable, not 500.
func TestUnknownErrorsTranslated(t *testing.T) {
	t.Parallel()
	lost := errors.New("conn closed")
	translate := func(err error) error {
		if errors.Is(err, lost) {
			return &wgerr.Error{Code: wgerr.CodeUnavailable, Message: "the database is unavailable", Err: err}
		}
		return err
	}
	for name, tt := range map[string]struct {
		a      *API
		status int
	}{
		"Translated":    {&API{log: slog.Default(), translate: translate}, http.StatusServiceUnavailable},
		"NoTranslation": {&API{log: slog.Default()}, http.StatusInternalServerError},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/v1/x", nil), rec)
			tt.a.ErrorHandler(func(error, echo.Context) { t.Fatal("an API path went to the next handler") })(fmt.Errorf("handler: %w", lost), c)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
		})
	}
}
