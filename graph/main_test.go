package graph

import (
	"os"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestMain drops the database dbtest.TestTx shares among this package's
// tests.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
