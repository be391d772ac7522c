package api_test

import (
	"strings"
	"testing"
)

// TestEmptyQueryValues: every list route treats a query parameter given
// with an empty value (?state=, ?outcome=) the same way: 400
// invalid_argument naming the parameter, as the items list did for
// state. The others read an empty value as no filter, so a client whose
// variable was unset listed everything when it meant to filter.
func TestEmptyQueryValues(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{"title": "a"})
	routes := map[string][]string{
		"/v1/projects/alpha/items":                      {"state", "label", "parent_id", "q", "sort", "cursor", "limit", "page_size"},
		"/v1/projects/alpha/attention":                  {"state", "item_id", "cursor", "limit"},
		"/v1/projects/alpha/leases":                     {"item_id", "worker", "outcome", "since", "until", "sort", "cursor", "limit"},
		"/v1/projects/alpha/items/" + it.ID + "/leases": {"worker", "outcome", "since", "until", "sort", "cursor"},
		"/v1/projects/alpha/events":                     {"after", "types", "item_id", "limit", "wait_seconds"},
		"/v1/projects/alpha/ids":                        {"kind"},
		"/v1/projects/alpha/graph":                      {"around", "depth", "limit"},
	}
	for path, params := range routes {
		for _, name := range params {
			for _, value := range []string{"", "%20"} {
				t.Run(strings.ReplaceAll(path[len("/v1/projects/alpha/"):], "/", "_")+"/"+name+"="+value, func(t *testing.T) {
					q := "?" + name + "=" + value
					if strings.HasSuffix(path, "/ids") {
						q += "&prefix=" + it.ID[:8]
					}
					p := f.do("GET", path+q, f.human.Token, nil).problem(t, 400, "invalid_argument")
					field(t, p, name)
				})
			}
		}
	}
	// A list of event types that names none (only commas and blanks) is
	// as empty as ?types=: it was read as no filter, every event. (The
	// streams read the same filter, eventsFilter; a stream that was not
	// refused would not end, so they are left out here.)
	for _, path := range []string{"/v1/projects/alpha/events", "/v1/events"} {
		for _, value := range []string{",", "%20,%20", ",,"} {
			t.Run("NoTypes/"+path+"/"+value, func(t *testing.T) {
				token := f.human.Token
				if strings.HasPrefix(path, "/v1/events") {
					token = adminToken
				}
				p := f.do("GET", path+"?types="+value, token, nil).problem(t, 400, "invalid_argument")
				field(t, p, "types")
			})
		}
	}
	// An unknown value of a filter with a fixed set is refused alike.
	for _, q := range []struct{ path, name, value string }{
		{"/v1/projects/alpha/items", "state", "bogus"},
		{"/v1/projects/alpha/items", "sort", "bogus"},
		{"/v1/projects/alpha/attention", "state", "bogus"},
		{"/v1/projects/alpha/leases", "outcome", "bogus"},
		{"/v1/projects/alpha/leases", "sort", "bogus"},
		{"/v1/projects/alpha/events", "types", "bogus"},
		{"/v1/projects/alpha/ids", "kind", "bogus"},
	} {
		t.Run("Unknown/"+q.path[len("/v1/projects/alpha/"):]+"/"+q.name, func(t *testing.T) {
			extra := ""
			if strings.HasSuffix(q.path, "/ids") {
				extra = "&prefix=" + it.ID[:8]
			}
			p := f.do("GET", q.path+"?"+q.name+"="+q.value+extra, f.human.Token, nil).problem(t, 400, "invalid_argument")
			field(t, p, q.name)
		})
	}
}
