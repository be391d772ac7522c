// Command stoptestpg stops the embedded PostgreSQL cluster that the tests
// start when no server answers at 127.0.0.1:5432, unless tests are using it
// (`make stop-test-pg`). The tests normally stop it themselves half a minute
// after the last test binary exits; this is for a cluster left behind, e.g.
// by a test run that was killed.
//
// With -drop-pool it instead drops the test databases that the tests keep
// on their server between runs (`make drop-test-pool`): the pool of
// reusable databases of every migrations digest, except those a running
// test binary holds, and the template databases of other digests than
// this build's (dbtest.DropPool).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

func main() {
	dropPool := flag.Bool("drop-pool", false, "drop the tests' pool of reusable databases instead of stopping the embedded cluster")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if *dropPool {
		logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
		if err := dbtest.DropPool(ctx, logf); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := dbtest.StopEmbedded(ctx, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
