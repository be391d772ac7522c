package web_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPageStreamEndsWithSession: a page's event stream ends when its
// session does (the token revoked, or signed out): nothing written after
// that is sent on it.
func TestPageStreamEndsWithSession(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"Revoked", "SignedOut"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			e := setup(t, live)
			tok, bearer, err := e.auth.Create(context.Background(), &e.project.ID, "watcher", "human")
			if err != nil {
				t.Fatal(err)
			}
			b := e.signIn(bearer)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/p/acme/events/stream", nil)
			res, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("stream: %d", res.StatusCode)
			}
			lines := make(chan string, 100)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			for l := range lines { // the retry field, then the blank line
				if l == "" {
					break
				}
			}
			if end == "Revoked" {
				if _, err := e.auth.Revoke(context.Background(), e.project.ID, tok.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				wantStatus(t, b.post("/signout", nil), http.StatusSeeOther)
			}
			e.mustItem("after the session")
			timeout := time.After(10 * time.Second)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						return
					}
					if strings.HasPrefix(l, "event:") {
						t.Fatalf("sent %q after the session ended", l)
					}
				case <-timeout:
					t.Fatal("the stream is still open 10 s after its session ended")
				}
			}
		})
	}
}
