package input_test

import (
	"os"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestMain drops the databases this binary's tests created, once they
// have all ended (dbtest.Main).
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
