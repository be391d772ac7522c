package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
)

// TestPrintLeasesClipsWorker: the history table cuts a long worker name
// (names may have 200 characters) as it cuts titles, so that a row stays
// readable; --json keeps the whole name.
func TestPrintLeasesClipsWorker(t *testing.T) {
	long := strings.Repeat("verylongworkername-", 6)
	var b bytes.Buffer
	printLeases(&b, []client.Lease{{ID: uuid.NewString(), ItemID: uuid.NewString(), Epoch: 1, Worker: long, AcquiredAt: time.Now()}})
	out := b.String()
	if strings.Contains(out, long) {
		t.Errorf("the whole %d-character name is in the table:\n%s", len(long), out)
	}
	if !strings.Contains(out, long[:31]+"…") {
		t.Errorf("want the name cut to 31 characters and an ellipsis:\n%s", out)
	}
}
