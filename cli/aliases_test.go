package cli

import (
	"io"
	"strings"
	"testing"
)

// TestListAlias: every `ls` command also answers to `list`, the word
// `items --help` ("Create, list, show, ...") and habit suggest; `items
// list` was an unknown command.
func TestListAlias(t *testing.T) {
	t.Parallel()
	root := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	n := 0
	for _, group := range root.Commands() {
		for _, sub := range group.Commands() {
			if sub.Name() != "ls" {
				continue
			}
			n++
			got, _, err := root.Find([]string{group.Name(), "list"})
			if err != nil || got != sub {
				t.Errorf("workgraph %s list: %v, want the command of %q", group.Name(), err, sub.CommandPath())
			}
		}
	}
	if n < 5 {
		t.Fatalf("found %d ls commands, want items, attention, projects, tokens and webhooks", n)
	}
}
