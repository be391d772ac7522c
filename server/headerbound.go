package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// transportHeaderBytes is http.Server.MaxHeaderBytes: net/http's own bound
// on a request line and headers. It is larger than MaxHeaderBytes so that
// a request a little past it reaches headerBound, which refuses it in the
// project's words (problem+json, code header_too_large); beyond it net/http
// answers 431 itself, as text/plain, before any handler runs. It is not
// Go's default 1 MiB: net/http holds what it has read of every connection's
// headers for up to HeaderReadTimeout, so this bound times the connections
// a slow client keeps open is memory nothing else bounds.
const transportHeaderBytes = MaxHeaderBytes + 128<<10

// headerBound refuses a request whose request line and headers are longer
// than MaxHeaderBytes (431 header_too_large), before routing: the API
// answers it as problem+json, the web UI as an error page.
func headerBound(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if n := headerBytes(c.Request()); n > MaxHeaderBytes {
			return wgerr.New(wgerr.CodeHeaderTooLarge,
				"the request line and headers are %d bytes, more than the %d (%d KiB) this server reads", n, MaxHeaderBytes, MaxHeaderBytes>>10)
		}
		return next(c)
	}
}

// headerBytes is the length of r's request line and headers as received,
// less the optional whitespace around the values that net/http trims:
// "METHOD target PROTO\r\n", "Host: ...\r\n" (net/http takes it out of
// Header), each "Name: value\r\n", and the blank line.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n + 2
}
