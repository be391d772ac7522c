package graph

import (
	"regexp"
	"strings"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Write scopes (Item.Touches): what an item's work writes while it is
// leased. Two live leases never hold overlapping scopes (lease.Claim).
//
// The grammar:
//
//	scope    = resource [ ":" path ]
//	resource = 1*64 ( ALPHA / DIGIT / "." / "_" / "-" )
//	path     = segment *( "/" segment )
//	segment  = "**" / 1*( ALPHA / DIGIT / "." / "_" / "-" / "+" / "=" / "@" / "," / "*" )
//
// A scope is at most MaxScopeChars long; "." and ".." are not segments, and
// "**" is only ever a whole segment. Names are case-sensitive. An item's
// scopes have at most MaxScopeSegments path segments in all.
//
// What a scope covers: a scope without a path covers the whole resource;
// with a path it covers the paths its glob matches, where "**" matches zero
// or more segments and any other segment matches exactly one segment, a
// "*" in it matching any run of characters (none included) within that
// segment. So "repo:web/src/**" covers "repo:web/src" and everything below
// it, "repo:web/*.go" covers the Go files directly in web, and "repo" covers
// all of repo.
//
// When two scopes overlap: their resources are equal, and either one has
// no path or their globs match at least one common path. The rule exists
// twice, here (ScopesOverlap) and in SQL (wg_scopes_overlap, migration
// 00032, which the claim applies); a test checks that they agree.
//
// Why the segments are bounded in all: every claim of a scoped item tests
// its scopes against the scopes of each live lease that may overlap them
// (wg_scopes_overlap), every scope of one against every scope of the
// other, and a pair of globs costs the product of their segment counts
// (globsOverlap's table). Without a bound on the sum, one item of 32
// scopes of 64 segments each, against a lease holding the like, cost
// seconds of database time in every claim of its project, past the
// statement timeout. With it, one test of two items' scopes is at most
// (MaxScopeSegments+MaxScopes)^2 cells.
const (
	MaxScopes        = 32
	MaxScopeChars    = 200
	MaxScopeSegments = 64
)

var (
	resourceRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	segmentRE  = regexp.MustCompile(`^(\*\*|[A-Za-z0-9._+=@,*-]+)$`)
)

// CleanScopes is the validator of write scopes (an item's touches): at most
// MaxScopes scopes of the grammar above. It drops duplicates, keeping the
// first occurrence's order. Errors: invalid_argument naming field.
func CleanScopes(field string, scopes []string) ([]string, error) {
	if len(scopes) > MaxScopes {
		return nil, wgerr.InvalidField(field, "has %d scopes; at most %d are allowed", len(scopes), MaxScopes)
	}
	out := make([]string, 0, len(scopes))
	seen := make(map[string]bool, len(scopes))
	segments := 0
	for _, s := range scopes {
		if err := checkScope(s); err != "" {
			return nil, wgerr.InvalidField(field, "scope %q %s (a scope is \"resource\" or \"resource:path/glob\", e.g. \"repo:web/src/**\")", s, err)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
			segments += scopeSegments(s)
		}
	}
	if segments > MaxScopeSegments {
		return nil, wgerr.InvalidField(field, "has %d path segments in all; at most %d are allowed (every claim compares them with the scopes of the live leases)", segments, MaxScopeSegments)
	}
	return out, nil
}

// checkScope says what is wrong with a scope ("" if nothing).
func checkScope(s string) string {
	if len(s) > MaxScopeChars {
		return "is longer than 200 characters"
	}
	resource, path, hasPath := strings.Cut(s, ":")
	if !resourceRE.MatchString(resource) {
		return "must start with a resource name of 1 to 64 letters, digits and . _ -"
	}
	if !hasPath {
		return ""
	}
	if path == "" {
		return "has an empty path (leave out the colon to cover the whole resource)"
	}
	for _, seg := range strings.Split(path, "/") {
		switch {
		case seg == "":
			return "has an empty path segment"
		case seg == "." || seg == "..":
			return "has a . or .. segment"
		case !segmentRE.MatchString(seg):
			return "has a path segment other than ** or letters, digits, * and . _ - + = @ ,"
		case strings.Contains(seg, "**") && seg != "**":
			return "uses ** inside a segment (** stands alone between slashes)"
		}
	}
	return ""
}

// scopeSegments is the number of path segments of a (valid) scope: 0
// without a path.
func scopeSegments(s string) int {
	_, path, ok := strings.Cut(s, ":")
	if !ok {
		return 0
	}
	return strings.Count(path, "/") + 1
}

// ScopeResource is the resource a (valid) scope names.
func ScopeResource(scope string) string {
	r, _, _ := strings.Cut(scope, ":")
	return r
}

// ScopesOverlap reports whether any scope of a overlaps any scope of b
// (see the rule above). The scopes must be valid (CleanScopes).
func ScopesOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if ScopeOverlaps(x, y) {
				return true
			}
		}
	}
	return false
}

// ScopeOverlaps reports whether two valid scopes overlap.
func ScopeOverlaps(a, b string) bool {
	ra, pa, hasA := strings.Cut(a, ":")
	rb, pb, hasB := strings.Cut(b, ":")
	if ra != rb {
		return false
	}
	if !hasA || !hasB {
		return true
	}
	return globsOverlap(strings.Split(pa, "/"), strings.Split(pb, "/"))
}

// globsOverlap reports whether two globs, as segments, match a common
// path. ok[i][j] says whether a[i:] and b[j:] do; it is filled from the
// ends backwards. A "**" either matches nothing more (step past it) or
// takes the next segment the other glob's head matches (stay on it).
func globsOverlap(a, b []string) bool {
	n, m := len(a), len(b)
	ok := make([][]bool, n+1)
	for i := range ok {
		ok[i] = make([]bool, m+1)
	}
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			switch {
			case i == n && j == m:
				ok[i][j] = true
			case i < n && a[i] == "**":
				ok[i][j] = ok[i+1][j] || (j < m && ok[i][j+1])
			case j < m && b[j] == "**":
				ok[i][j] = ok[i][j+1] || (i < n && ok[i+1][j])
			case i < n && j < m:
				ok[i][j] = ok[i+1][j+1] && segmentsOverlap(a[i], b[j])
			}
		}
	}
	return ok[0][0]
}

// segmentsOverlap reports whether two one-segment patterns match a common
// segment. Without "*" a pattern is a literal; a literal and a pattern
// overlap when the pattern matches the literal. Two patterns with "*"
// overlap exactly when their literal prefixes (before the first "*") are
// prefixes of one another and their literal suffixes (after the last "*")
// suffixes of one another: then the longer prefix, the middle literals of
// both and the longer suffix, in that order, form a segment both match
// (each pattern's first "*" takes what lies between its prefix and its
// middle, its last "*" what lies between its middle and its suffix).
func segmentsOverlap(a, b string) bool {
	sa, sb := strings.Contains(a, "*"), strings.Contains(b, "*")
	switch {
	case !sa && !sb:
		return a == b
	case !sa:
		return segmentMatch(b, a)
	case !sb:
		return segmentMatch(a, b)
	}
	pa, pb := a[:strings.IndexByte(a, '*')], b[:strings.IndexByte(b, '*')]
	xa, xb := a[strings.LastIndexByte(a, '*')+1:], b[strings.LastIndexByte(b, '*')+1:]
	return (strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) &&
		(strings.HasSuffix(xa, xb) || strings.HasSuffix(xb, xa))
}

// segmentMatch reports whether the one-segment pattern p matches the
// literal s ("*" matches any run of characters).
func segmentMatch(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for _, mid := range parts[1 : len(parts)-1] {
		k := strings.Index(s, mid)
		if k < 0 {
			return false
		}
		s = s[k+len(mid):]
	}
	return strings.HasSuffix(s, last)
}
