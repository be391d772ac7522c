package bodygate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestPerClient(t *testing.T) {
	t.Parallel()
	const bound = 1 << 20 // bodies over SmallBody share 896 KiB of a client's part

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		p := bodygate.NewPerClient("forms from one address", bound, 10*time.Millisecond)
		for range 16 { // a's whole part in small bodies
			defer mustEnterAs(t, p, "a", bodygate.SmallBody)()
		}
		if _, err := p.Enter(context.Background(), "a", 1); wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("a body beyond a's part: %v, want rate_limited", err)
		}
		defer mustEnterAs(t, p, "b", bound)() // b has a part of its own
		if p.InUse("a") != bound || p.InUse("b") != 7*bound/8 {
			t.Fatalf("a holds %d, b %d; want %d and %d", p.InUse("a"), p.InUse("b"), bound, 7*bound/8)
		}
		if p.Clients() != 2 {
			t.Fatalf("%d clients in the table, want 2", p.Clients())
		}
	})
	t.Run("TableEmptiesWithTheLastRelease", func(t *testing.T) {
		t.Parallel()
		p := bodygate.NewPerClient("forms from one address", bound, 10*time.Millisecond)
		var releases []func()
		for i := range 1000 { // addresses an attacker chose
			releases = append(releases, mustEnterAs(t, p, fmt.Sprintf("2001:db8:%x::/64", i), 100))
		}
		release := mustEnterAs(t, p, "a", 7*bound/8)
		if _, err := p.Enter(context.Background(), "a", bound); wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("a second large body of a: %v, want rate_limited", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p.Enter(ctx, "a", bound); wgerr.CodeOf(err) != wgerr.CodeUnavailable {
			t.Fatalf("a wait whose request ended: %v, want unavailable", err)
		}
		if p.Clients() != 1001 {
			t.Fatalf("%d clients in the table, want 1001", p.Clients())
		}
		for _, r := range releases {
			r()
			r() // a second call gives nothing back twice
		}
		release()
		if p.Clients() != 0 || p.InUse("a") != 0 {
			t.Fatalf("%d clients in the table (a holds %d) after every release, want none", p.Clients(), p.InUse("a"))
		}
	})
	t.Run("ErrRefusedLeavesNoEntry", func(t *testing.T) {
		t.Parallel()
		p := bodygate.NewPerClient("forms from one address", bound, 10*time.Millisecond)
		release := mustEnterAs(t, p, "a", bound)
		if _, err := p.Enter(context.Background(), "a", bound); wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("a body beyond a's part: %v, want rate_limited", err)
		}
		release()
		if p.Clients() != 0 {
			t.Fatalf("%d clients in the table after a refusal and a release, want none", p.Clients())
		}
	})
	t.Run("WaitsForItsOwnRoom", func(t *testing.T) {
		t.Parallel()
		p := bodygate.NewPerClient("forms from one address", bound, time.Minute)
		release := mustEnterAs(t, p, "a", bound)
		waited := make(chan error, 1)
		go func() {
			r, err := p.Enter(context.Background(), "a", bound)
			if err == nil {
				r()
			}
			waited <- err
		}()
		release()
		if err := <-waited; err != nil {
			t.Fatalf("a's waiting body once a's room came back: %v", err)
		}
		if p.Clients() != 0 {
			t.Fatalf("%d clients in the table, want none", p.Clients())
		}
	})
	t.Run("NoBodyTakesNoEntry", func(t *testing.T) {
		t.Parallel()
		p := bodygate.NewPerClient("forms from one address", bound, time.Minute)
		defer mustEnterAs(t, p, "a", 0)()
		if p.Clients() != 0 {
			t.Fatalf("%d clients in the table for a request without a body, want none", p.Clients())
		}
	})
}

func mustEnterAs(t *testing.T, p *bodygate.PerClient, client string, size int64) func() {
	t.Helper()
	release, err := p.Enter(context.Background(), client, size)
	if err != nil {
		t.Fatalf("enter %d bytes as %s: %v", size, client, err)
	}
	return release
}
