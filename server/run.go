package server

import (
	"context"
	"time"
)

// Run starts the server and blocks until ctx is cancelled (SIGINT/SIGTERM
// in the binary) or the server fails, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-s.done:
		s.close()
		return err
	}
	s.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Shutdown(shutdownCtx)
}
