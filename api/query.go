package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Bounds of query parameters, checked by checkParams on every /v1 route
// before any database work. A parameter longer than anything the route could
// use must not reach SQL: a 100,000-character q once held a connection for
// 15 s.
const (
	// maxQueryBytes bounds the whole query string.
	maxQueryBytes = 8 << 10
	// maxQueryValues bounds how often one parameter may be repeated.
	maxQueryValues = 10
	// maxQueryName bounds a parameter's name.
	maxQueryName = 64
	// defaultQueryChars bounds a parameter not in queryBounds (ids, times,
	// numbers, states, cursors).
	defaultQueryChars = 200
)

// queryBounds are the parameters whose bound is not defaultQueryChars:
// those matched against stored text get the bound of that text (no longer
// value could match anything).
var queryBounds = map[string]int{
	"q":      graph.MaxTitleChars, // a substring of the title
	"label":  graph.MaxLabelChars,
	"worker": 200, // leases.worker is 1..200
}

// repeatable are the parameters that take several values, each given as
// often as needed (or as a comma-separated list); any other parameter takes
// one value and is refused when given twice: read as its first value, the
// others silently ignored, a request would mean one thing to the server and
// another to a proxy or a log that reads the last.
var repeatable = map[string]bool{"state": true, "kind": true, "types": true}

// checkQuery refuses a request whose query string, or one of its
// parameters, is over its bound, which gives a parameter an empty (or
// blank) value, or a parameter of one value more than once, with 400 invalid_argument naming the parameter.
func checkQuery(r *http.Request) error {
	raw := r.URL.RawQuery
	if raw == "" {
		return nil
	}
	if len(raw) > maxQueryBytes {
		return wgerr.InvalidField("query", "the query string is %d bytes long; at most %d are allowed", len(raw), maxQueryBytes)
	}
	for name, values := range r.URL.Query() {
		if len(name) > maxQueryName {
			return wgerr.InvalidField(strings.ToValidUTF8(name[:maxQueryName], ""), "a query parameter name is at most %d bytes", maxQueryName)
		}
		if len(values) > maxQueryValues {
			return wgerr.InvalidField(name, "is given %d times; at most %d are allowed", len(values), maxQueryValues)
		}
		if len(values) > 1 && !repeatable[name] {
			return wgerr.InvalidField(name, "is given %d times; it takes one value: give it once", len(values))
		}
		bound, ok := queryBounds[name]
		if !ok {
			bound = defaultQueryChars
		}
		for _, v := range values {
			if strings.TrimSpace(v) == "" {
				// An empty value is not "no filter": a client whose variable
				// was unset would list everything when it meant to filter.
				return wgerr.InvalidField(name, "must not be empty (leave the parameter out instead)")
			}
			if n := utf8.RuneCountInString(v); n > bound {
				return wgerr.InvalidField(name, "is %d characters long; at most %d are allowed", n, bound)
			}
		}
	}
	return nil
}
