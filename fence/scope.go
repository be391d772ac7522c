package fence

import (
	"errors"
	"fmt"
	"strings"
)

// Write scopes in a token: Claims.Scopes are the write scopes workgraph
// granted the lease (its item's touches when it was claimed; two live
// leases never hold overlapping ones). A destination that knows what a
// request writes can refuse a write outside them (Middleware.Target,
// CheckScope), so an agent is held to what its item declared, not only
// to its epoch.
//
// A scope is "resource" (all of it) or "resource:path/glob", where "**"
// matches zero or more path segments and "*" within a segment any run of
// characters (workgraph's grammar, see its docs/api.md). A target, what a
// request writes, is "resource" (the whole resource) or "resource:a/b/c"
// with literal segments.

// ErrOutOfScope is a write outside the scopes of the token's lease.
var ErrOutOfScope = errors.New("fence: the write is outside the lease's write scopes")

// Covers reports whether target (a resource, or a resource and a literal
// path) lies inside one of the token's scopes: a scope without a path
// covers all of its resource; a scope with a path covers the paths its
// glob matches. The whole resource is covered only by a scope without a
// path. A token without scopes covers nothing, and no scope covers a
// target whose path has an empty, "." or ".." segment.
func (c Claims) Covers(target string) bool {
	res, path, hasPath := strings.Cut(target, ":")
	if hasPath && !literalPath(path) {
		return false
	}
	for _, s := range c.Scopes {
		sres, glob, scoped := strings.Cut(s, ":")
		switch {
		case sres != res:
		case !scoped:
			return true
		case hasPath && globMatch(strings.Split(glob, "/"), strings.Split(path, "/")):
			return true
		}
	}
	return false
}

// literalPath reports whether path is literal segments a scope can judge:
// none empty (no leading, trailing or doubled "/"), none "." or "..",
// which would name a place other than the one the segments spell
// ("web/../api" is "api"). A target with another path is covered by no
// scope, so a destination need not clean it first.
func literalPath(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// CheckScope is ErrOutOfScope (wrapped, naming the target and the
// scopes) when the token's scopes do not cover target, for a destination
// that checks scopes without the Middleware.
func (c Claims) CheckScope(target string) error {
	if c.Covers(target) {
		return nil
	}
	if _, path, ok := strings.Cut(target, ":"); ok && !literalPath(path) {
		return fmt.Errorf("%w: %s is not a literal path (an empty, . or .. segment)", ErrOutOfScope, target)
	}
	if len(c.Scopes) == 0 {
		return fmt.Errorf("%w: %s is not covered; lease %s holds no write scope (its item declares no touches)", ErrOutOfScope, target, c.Lease)
	}
	return fmt.Errorf("%w: %s is not covered by lease %s's scopes %v", ErrOutOfScope, target, c.Lease, c.Scopes)
}

// globMatch reports whether the glob's segments match the path's literal
// segments: ok[i][j] says whether glob[i:] matches path[j:], filled from
// the ends backwards; "**" matches nothing more (step past it) or takes
// the path's next segment (stay on it).
func globMatch(glob, path []string) bool {
	n, m := len(glob), len(path)
	ok := make([][]bool, n+1)
	for i := range ok {
		ok[i] = make([]bool, m+1)
	}
	ok[n][m] = true
	for i := n - 1; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			if glob[i] == "**" {
				ok[i][j] = ok[i+1][j] || (j < m && ok[i][j+1])
				continue
			}
			ok[i][j] = j < m && ok[i+1][j+1] && segmentMatch(glob[i], path[j])
		}
	}
	return ok[0][0]
}

// segmentMatch reports whether the one-segment pattern p matches the
// literal s ("*" matches any run of characters, none included).
func segmentMatch(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		k := strings.Index(s, mid)
		if k < 0 {
			return false
		}
		s = s[k+len(mid):]
	}
	return true
}
