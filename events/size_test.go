package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/events"
)

// TestEventSizeEncoded: an event's Size (what it costs of a page's byte
// budget) is at least its type, actor and payload as a JSON answer writes
// them, escapes included: a title of < in a payload is 6 times its stored
// bytes there. Size used to count the stored bytes.
func TestEventSizeEncoded(t *testing.T) {
	t.Parallel()
	html := strings.Repeat("<&>", 1000)
	e := events.Event{Type: "item.updated", Actor: "token:" + html, Payload: json.RawMessage(`{"title": "` + html + `", "version": 2}`)}
	encoded, err := json.Marshal(map[string]any{"type": e.Type, "actor": e.Actor, "payload": e.Payload})
	if err != nil {
		t.Fatal(err)
	}
	if e.Size() < len(encoded) {
		t.Fatalf("Size() = %d, less than the %d bytes of its JSON", e.Size(), len(encoded))
	}
}
