package api_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/internal/docscan"
)

// TestDocumentedRequestsExist reads the API requests the README and docs/
// show (curl lines in code blocks, and every "METHOD /v1/...") and
// checks that the server serves each method and path. A renamed route
// must fail here, not in a reader's terminal.
func TestDocumentedRequestsExist(t *testing.T) {
	t.Parallel()
	routes := servedRoutes()
	docs, err := docscan.All("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for file, lines := range docs {
		for _, r := range documentedRequests(lines) {
			seen++
			if !served(routes, r.method, r.path) {
				t.Errorf("%s:%d: %s %s: the server serves no such route", file, r.line, r.method, r.path)
			}
		}
	}
	if seen < 50 {
		t.Fatalf("found only %d documented requests: the scan broke", seen)
	}
	t.Logf("%d documented requests checked", seen)
}

// TestServedRefusesUnknownRoutes plants the mistakes the check is there for.
func TestServedRefusesUnknownRoutes(t *testing.T) {
	t.Parallel()
	routes := servedRoutes()
	for _, bad := range []struct{ method, path string }{
		{"POST", "/v1/projects/default/claim"},              // the route is claims
		{"DELETE", "/v1/projects/default/items/$B"},         // no such method
		{"GET", "/v1/projects/default/items/$B/graph/more"}, // too deep
	} {
		if served(routes, bad.method, bad.path) {
			t.Errorf("%s %s passed the check", bad.method, bad.path)
		}
	}
	if !served(routes, "POST", "/v1/projects/{p}/claims") || !served(routes, "GET", "/v1/projects/default/items/<id>") {
		t.Error("a served route failed the check")
	}
}

// servedRoutes are the API's routes.
func servedRoutes() []route {
	e := echo.New()
	api.New(api.Config{}).Mount(e)
	var routes []route
	for _, r := range e.Routes() {
		if strings.HasPrefix(r.Path, "/v1/") && r.Method != echo.RouteNotFound {
			routes = append(routes, route{r.Method, strings.Split(strings.TrimPrefix(r.Path, "/"), "/")})
		}
	}
	return routes
}

type route struct {
	method   string
	segments []string
}

type documentedRequest struct {
	line         int
	method, path string
}

// served reports whether a route serves method on path; a route's :param
// matches any one segment.
func served(routes []route, method, path string) bool {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, r := range routes {
		if r.method != method || len(r.segments) != len(segs) {
			continue
		}
		ok := true
		for i, s := range r.segments {
			if !strings.HasPrefix(s, ":") && s != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

var (
	curlURL    = regexp.MustCompile(`(?:\$\{?WG\}?|https?://[0-9a-z.:-]+)(/v1/[^\s"'?)\\]*)`)
	curlMethod = regexp.MustCompile(`(?:-X|--request)\s+([A-Z]+)`)
	curlData   = regexp.MustCompile(`\s(?:-d|--data|--data-binary|--data-raw|-F|--json)\s`)
	// "POST /v1/leases/{id}/stop" anywhere: in a table, in code, in a sentence.
	namedRoute = regexp.MustCompile("\\b(GET|POST|PUT|PATCH|DELETE) (/v1/[^\\s`?)\\],;:\"']*)")
)

// documentedRequests returns the requests a document shows: each curl
// command of a code block, and each "METHOD /v1/path" anywhere. Paths
// abbreviated with "..." are skipped.
func documentedRequests(lines []docscan.Line) []documentedRequest {
	var out []documentedRequest
	add := func(line int, method, path string) {
		if strings.Contains(path, "...") {
			return
		}
		out = append(out, documentedRequest{line: line, method: method, path: strings.TrimSuffix(path, "/")})
	}
	for _, l := range lines {
		for _, m := range namedRoute.FindAllStringSubmatch(l.Text, -1) {
			add(l.N, m[1], strings.TrimRight(m[2], "."))
		}
		if !l.Shell() {
			continue
		}
		// One shell line may hold several curl commands ($(curl ...)).
		for _, cmd := range strings.Split(l.Text, "curl ")[1:] {
			if i := strings.Index(cmd, " #"); i >= 0 {
				cmd = cmd[:i]
			}
			u := curlURL.FindStringSubmatch(cmd)
			if u == nil {
				continue
			}
			method := "GET"
			if m := curlMethod.FindStringSubmatch(cmd); m != nil {
				method = m[1]
			} else if curlData.MatchString(" " + cmd + " ") {
				method = "POST"
			}
			add(l.N, method, u[1])
		}
	}
	return out
}

// TestDocumentedBodiesDeclareJSON: every documented curl command that
// sends a body to the API declares it as JSON, by its own -H or through
// the "${auth[@]}" array that docs/api.md defines with the header (curl's
// -d alone declares a form, which the API refuses with 415).
func TestDocumentedBodiesDeclareJSON(t *testing.T) {
	t.Parallel()
	docs, err := docscan.All("..")
	if err != nil {
		t.Fatal(err)
	}
	declares := regexp.MustCompile(`(?i)-H\s*["']?Content-Type:\s*application/json|--json\s`)
	authArray := regexp.MustCompile(`\bauth=\((.*)\)`)
	seen := 0
	for file, lines := range docs {
		for _, l := range lines {
			if m := authArray.FindStringSubmatch(l.Text); m != nil && l.Shell() && !declares.MatchString(m[1]) {
				t.Errorf("%s:%d: the auth array does not declare JSON: %s", file, l.N, l.Text)
			}
			if !l.Shell() {
				continue
			}
			for _, cmd := range strings.Split(l.Text, "curl ")[1:] {
				if i := strings.Index(cmd, " #"); i >= 0 {
					cmd = cmd[:i]
				}
				if curlURL.FindStringSubmatch(cmd) == nil || !curlData.MatchString(" "+cmd+" ") {
					continue
				}
				seen++
				if !declares.MatchString(cmd) && !strings.Contains(cmd, `"${auth[@]}"`) {
					t.Errorf("%s:%d: a curl body sent without Content-Type: application/json: curl %s", file, l.N, cmd)
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("found only %d documented bodies: the scan broke", seen)
	}
}
