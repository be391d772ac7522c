// Command stoptestpg stops the embedded PostgreSQL cluster that the tests
// start when no server answers at 127.0.0.1:5432, unless tests are using it
// (`make stop-test-pg`). The tests normally stop it themselves half a minute
// after the last test binary exits; this is for a cluster left behind, e.g.
// by a test run that was killed.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := dbtest.StopEmbedded(ctx, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
