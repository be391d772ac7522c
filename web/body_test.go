package web_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestFormBodiesAreBounded: the UI reads a request body only as a
// URL-encoded form of bounded size, and refuses any other before reading
// it, for visitors without a session too. A multipart body (no form of the
// UI sends one) was parsed on every route before the session or the CSRF
// token was looked at: 32 MiB into memory and the rest into temporary files
// that the server never removed; a URL-encoded body was read up to 10 MiB,
// and past that the form was silently ignored. Now a multipart body is 415
// and a body over the limit 413, and nothing is stored.
func TestFormBodiesAreBounded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	before := allItems(t, e)

	multipartReq := func(method, path string, fields map[string]string) *http.Request {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			if err := mw.WriteField(k, v); err != nil {
				t.Fatal(err)
			}
		}
		fw, err := mw.CreateFormFile("upload", "big.bin")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(bytes.Repeat([]byte("x"), 64<<10))
		mw.Close()
		req, _ := http.NewRequest(method, e.srv.URL+path, &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Origin", e.srv.URL)
		return req
	}

	t.Run("MultipartSignin", func(t *testing.T) {
		anon := e.browser()
		anon.get("/signin")
		r := anon.do(multipartReq(http.MethodPost, "/signin", map[string]string{"csrf": anon.csrf, "token": e.human}))
		wantStatus(t, r, http.StatusUnsupportedMediaType)
	})
	t.Run("MultipartGet", func(t *testing.T) {
		r := e.browser().do(multipartReq(http.MethodGet, "/signin", nil))
		wantStatus(t, r, http.StatusUnsupportedMediaType)
	})
	t.Run("MultipartNewItem", func(t *testing.T) {
		b.get("/p/acme/items/new")
		r := b.do(multipartReq(http.MethodPost, "/p/acme/items", map[string]string{"csrf": b.csrf, "title": "multipart", "priority": "0"}))
		wantStatus(t, r, http.StatusUnsupportedMediaType)
	})
	t.Run("TooLarge", func(t *testing.T) {
		b.get("/p/acme/items/new")
		r := b.post("/p/acme/items", url.Values{"title": {"big"}, "priority": {"0"}, "body": {strings.Repeat("é", 4<<20)}})
		wantStatus(t, r, http.StatusRequestEntityTooLarge)
	})
	t.Run("TooLargeAnonymous", func(t *testing.T) {
		anon := e.browser()
		anon.get("/signin")
		r := anon.post("/signin", url.Values{"token": {e.human}, "next": {strings.Repeat("a", 11<<20)}})
		wantStatus(t, r, http.StatusRequestEntityTooLarge)
	})
	t.Run("TooLargeChunked", func(t *testing.T) {
		b.get("/p/acme/items/new")
		form := url.Values{"csrf": {b.csrf}, "title": {"chunked"}, "priority": {"0"}, "body": {strings.Repeat("é", 4<<20)}}
		// A reader of unknown length: the request is sent chunked, with no
		// Content-Length to refuse it by.
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/p/acme/items", io.MultiReader(strings.NewReader(form.Encode())))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.srv.URL)
		r := b.do(req)
		wantStatus(t, r, http.StatusRequestEntityTooLarge)
	})
	if after := allItems(t, e); after != before {
		t.Fatalf("items %d -> %d: a refused form stored something", before, after)
	}
	t.Run("LargestBodyFits", func(t *testing.T) {
		// The largest item body, every byte of it percent-encoded.
		b.get("/p/acme/items/new")
		r := b.post("/p/acme/items", url.Values{"title": {"largest"}, "priority": {"0"}, "body": {strings.Repeat("é", graph.MaxBodyBytes/2)}})
		wantStatus(t, r, http.StatusSeeOther)
	})
}
