package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// A request still running when Shutdown's grace period ends (a drawing, a
// long query) has its context cancelled, so it cannot hold the exit.
func TestShutdownCancelsRunningRequests(t *testing.T) {
	t.Parallel()
	s, err := Start(context.Background(), Config{
		DatabaseURL: dbtest.URL(t), Addr: "127.0.0.1:18460",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	entered, ended := make(chan struct{}), make(chan error, 1)
	s.echo.GET("/test/hold", func(c echo.Context) error {
		close(entered)
		<-c.Request().Context().Done()
		ended <- c.Request().Context().Err()
		return nil
	})
	go func() {
		if resp, err := http.Get(s.URL() + "/test/hold"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	grace, cancel := context.WithCancel(context.Background())
	cancel() // the grace period is over at once
	if err := s.Shutdown(grace); err == nil {
		t.Error("Shutdown with a request running past the grace period returned nil")
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("request ended without a context error")
		}
	case <-time.After(30 * time.Second): // a hang, not a speed bound
		t.Fatal("the request's context was not cancelled at shutdown")
	}
}
