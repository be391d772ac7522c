package server

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// bodyDeadline gives a request with a body d to deliver it: the
// connection's read deadline is set when the handler starts and cleared
// when the body has been read to its end (or closed), so the rest of the
// request (a long poll waiting for work) runs without one. A client that
// trickles its body past the deadline gets a read error, its request fails
// and its connection is closed.
func bodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline once the body is done.
type deadlineBody struct {
	io.ReadCloser
	once  sync.Once
	clear func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.clear)
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.once.Do(b.clear)
	return b.ReadCloser.Close()
}
