package web

import "testing"

// TestSafeNext feeds the sign-in's return address the spellings browsers
// read as another origin; each must come back as "/".
func TestSafeNext(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		// Same-origin paths survive, with their query and fragment.
		"":                          "/",
		"/":                         "/",
		"/p/acme/inbox":             "/p/acme/inbox",
		"/p/acme/items?state=ready": "/p/acme/items?state=ready",
		"/p/acme/items#top":         "/p/acme/items#top",
		"/p/a%2Fb/inbox":            "/p/a%2Fb/inbox",
		// Another origin, plainly.
		"//evil.example/x":       "/",
		"/\\evil.example/x":      "/",
		"\\\\evil.example/x":     "/",
		"https://evil.example/x": "/",
		"http:evil.example":      "/",
		"javascript:alert(1)":    "/",
		"JavaScript:alert(1)":    "/",
		"data:text/html,x":       "/",
		"evil.example":           "/",
		"p/acme/inbox":           "/",
		"?next=//evil.example":   "/",
		"#frag":                  "/",
		"///evil.example/x":      "/",
		"/\\/evil.example/x":     "/",
		// Browsers drop ASCII tab, LF and CR anywhere in a URL and read a
		// backslash as a slash.
		"/\t/evil.example/x":    "/",
		"/\n/evil.example/x":    "/",
		"/\r/evil.example/x":    "/",
		"\t//evil.example/x":    "/",
		"/\t\\evil.example/x":   "/",
		"/\r\n/evil.example":    "/",
		"/p/acme\t/inbox":       "/",
		" //evil.example/x":     "/",
		"/ /evil.example/x":     "/",
		"\x00//evil.example":    "/",
		"/\x00/evil.example":    "/",
		"/\x1f/evil.example":    "/",
		"/\x7f/evil.example":    "/",
		"/%09/evil.example/x":   "/%09/evil.example/x", // an escaped tab stays a path byte
		"/%2F/evil.example/x":   "/%2F/evil.example/x", // so does an escaped slash
		"/%5C/evil.example/x":   "/%5C/evil.example/x",
		"/\u3000/evil.example":  "/",
		"/\u00a0/evil.example":  "/",
		"/\ufeff/evil.example":  "/",
		"/p/\xff/inbox":         "/",
		"https:/evil.example/x": "/",
		"/..//evil.example":     "/..//evil.example",
	}
	for in, want := range tests {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
