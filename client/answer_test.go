package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLargeAnswerRead: a plan import's answer can pass 64 MiB (50,000
// items whose titles JSON escapes six bytes a character); the client reads
// it whole instead of cutting it there and failing to decode an answer
// whose request succeeded.
func TestLargeAnswerRead(t *testing.T) {
	t.Parallel()
	title := strings.Repeat(`\u003c`, 500)
	var b strings.Builder
	b.WriteString(`{"items": [`)
	n := 0
	for b.Len() <= 65<<20 {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "00000000-0000-0000-0000-%012d", "title": "%s", "state": "ready"}`, n, title)
		n++
	}
	b.WriteString(`], "keys": {}, "existing": {}, "dry_run": false}`)
	answer := b.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ImportPlan(context.Background(), "p", PlanRequest{Items: []PlanItem{{Key: "a", Title: "a"}}})
	if err != nil {
		t.Fatalf("an answer of %d bytes: %v", len(answer), err)
	}
	if len(res.Items) != n {
		t.Fatalf("%d items read, want %d", len(res.Items), n)
	}
}
