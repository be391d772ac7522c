package fence_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/graph"
)

func TestCovers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scopes []string
		target string
		want   bool
	}{
		{[]string{"repo"}, "repo", true},
		{[]string{"repo"}, "repo:web/a.go", true},
		{[]string{"repo:web/**"}, "repo:web", true},
		{[]string{"repo:web/**"}, "repo:web/src/a.go", true},
		{[]string{"repo:web/**"}, "repo", false}, // the whole resource is more than the scope
		{[]string{"repo:web/**"}, "repo:api/a.go", false},
		{[]string{"repo:web/**"}, "db:web/a.go", false},
		{[]string{"repo:web/*.go"}, "repo:web/a.go", true},
		{[]string{"repo:web/*.go"}, "repo:web/sub/a.go", false},
		{[]string{"repo:web/*.go"}, "repo:web/a.gox", false},
		{[]string{"repo:**/x"}, "repo:x", true},
		{[]string{"repo:**/x"}, "repo:a/b/x", true},
		{[]string{"repo:a*b*c"}, "repo:abc", true},
		{[]string{"repo:a*b*c"}, "repo:ac", false},
		{[]string{"repo:ab*ba"}, "repo:aba", false}, // prefix and suffix may not share characters
		{[]string{"db:schema", "repo:web/**"}, "repo:web/x", true},
		{nil, "repo:web/x", false},
		// A target whose path is not clean literal segments is covered by
		// no scope: ".." would climb out of the scope ("web/../api" is
		// "api") or the resource, and "." or an empty segment are not
		// literal segments.
		{[]string{"repo:web/**"}, "repo:web/../api/x.go", false},
		{[]string{"repo:web/**"}, "repo:web/..", false},
		{[]string{"repo:web/*"}, "repo:web/..", false},
		{[]string{"repo:**"}, "repo:../etc/passwd", false},
		{[]string{"repo:web/**"}, "repo:web/./a.go", false},
		{[]string{"repo:web/**"}, "repo:web//a.go", false},
		{[]string{"repo:web/**"}, "repo:web/", false},
		{[]string{"repo:**"}, "repo:/etc/passwd", false},
		{[]string{"repo:**"}, "repo:", false},
		{[]string{"repo"}, "repo:web/../../x", false}, // it may climb out of the resource
	}
	for _, c := range cases {
		if got := (fence.Claims{Scopes: c.scopes}).Covers(c.target); got != c.want {
			t.Errorf("%v covers %q = %v, want %v", c.scopes, c.target, got, c.want)
		}
	}
}

// TestCoversAgreesWithGraph: for a literal target, being covered by a
// scope is overlapping it, so fence.Covers must agree with workgraph's
// overlap rule (graph.ScopeOverlaps, which the claim applies) on every
// pair of small scopes and literal targets.
func TestCoversAgreesWithGraph(t *testing.T) {
	t.Parallel()
	segs := []string{"a", "b", "ab", "*", "a*", "*b", "a*b", "**"}
	lits := []string{"a", "b", "ab", "aab", "ba"}
	var globs []string
	for _, x := range segs {
		globs = append(globs, x)
		for _, y := range segs {
			globs = append(globs, x+"/"+y)
			for _, z := range []string{"a", "**", "*b"} {
				globs = append(globs, x+"/"+y+"/"+z)
			}
		}
	}
	var paths []string
	for _, x := range lits {
		paths = append(paths, x)
		for _, y := range lits {
			paths = append(paths, x+"/"+y)
			for _, z := range []string{"a", "ab"} {
				paths = append(paths, x+"/"+y+"/"+z)
			}
		}
	}
	scopes := []string{"r", "s"}
	for _, g := range globs {
		scopes = append(scopes, "r:"+g)
	}
	targets := []string{"r", "s"}
	for _, p := range paths {
		targets = append(targets, "r:"+p)
	}
	n := 0
	for _, s := range scopes {
		if _, err := graph.CleanScopes("s", []string{s}); err != nil {
			t.Fatalf("scope %q: %v", s, err)
		}
		for _, target := range targets {
			want := graph.ScopeOverlaps(s, target)
			if !strings.Contains(target, ":") && strings.Contains(s, ":") {
				want = false // the whole resource is not inside a path scope
			}
			if got := (fence.Claims{Scopes: []string{s}}).Covers(target); got != want {
				t.Errorf("%q covers %q = %v; the graph's rule says %v", s, target, got, want)
			}
			n++
		}
	}
	t.Logf("%d pairs", n)
}

func TestTokenScopes(t *testing.T) {
	t.Parallel()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	claims := fence.Claims{Lease: "l", Item: "i", Project: "p", Epoch: 3, Expires: time.Unix(0, 0),
		Scopes: []string{"repo:web/**", "db:schema"}}
	tok, err := fence.Sign(key, claims)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fence.Verify([]ed25519.PublicKey{pub}, tok)
	if err != nil || !slices.Equal(got.Scopes, claims.Scopes) {
		t.Fatalf("Verify = %+v, %v; want the signed scopes %v", got, err, claims.Scopes)
	}
	if err := got.CheckScope("repo:api/x.go"); !errors.Is(err, fence.ErrOutOfScope) {
		t.Fatalf("CheckScope outside = %v, want ErrOutOfScope", err)
	}
	if err := got.CheckScope("db:schema"); err != nil {
		t.Fatalf("CheckScope inside = %v", err)
	}
	// A token without scopes carries no scopes member (tokens of leases
	// holding none are as before).
	plain, _ := fence.Sign(key, fence.Claims{Lease: "l", Item: "i", Project: "p", Epoch: 1, Scopes: []string{}})
	if body := decodeClaims(t, plain); strings.Contains(body, "scopes") {
		t.Fatalf("claims of a lease without scopes: %s", body)
	}
}

// decodeClaims returns the JSON claims of a token, unverified.
func decodeClaims(t *testing.T, tok string) string {
	t.Helper()
	body64, _, _ := strings.Cut(strings.TrimPrefix(tok, fence.TokenPrefix), ".")
	b, err := base64.RawURLEncoding.DecodeString(body64)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
