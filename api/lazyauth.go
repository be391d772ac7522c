package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// authenticateLazy is authenticate for the steps of a lease (claim,
// heartbeat, complete): a token the service verified before is not looked
// up again; its check (auth.Service.Lazy) rides with the request's first
// statement, so the step costs the database one round trip. The request's
// writes commit only with the check passed, and its answer leaves only
// once the check passed: an answer about to be written before any
// statement ran waits for the check (checkedWriter), and an error answer
// waits for it too, so a refused token is answered 401 exactly as
// authenticate answers it, and counted by the throttle. The record of an
// Idempotency-Key is the request's first statement, and carries the check.
// A token not verified before goes through authenticate.
func (a *API) authenticateLazy(next echo.HandlerFunc) echo.HandlerFunc {
	eager := a.authenticate(next)
	return func(c echo.Context) error {
		// A token remembered passes the throttle (throttled), so it is
		// looked at first: the step pays no hash twice.
		addr := auth.ClientAddr(c.Request())
		bearer, err := bearerOf(c)
		if err != nil {
			return eager(c)
		}
		p, ctx, ok := a.auth.Lazy(c.Request().Context(), bearer)
		if !ok {
			return eager(c)
		}
		c.Set(principalKey, p)
		c.SetRequest(c.Request().WithContext(events.WithActor(ctx, p.String())))
		res := c.Response()
		w := &checkedWriter{ResponseWriter: res.Writer, confirm: func() error { return a.auth.Confirm(ctx) }}
		res.Writer = w
		err = next(c)
		res.Writer = w.ResponseWriter
		verdict := w.verdict
		if !w.judged {
			verdict = a.auth.Confirm(ctx)
		}
		if verdict == nil {
			return err
		}
		if w.judged && w.verdict != nil {
			// The answer was held back: start it again.
			res.Committed, res.Status, res.Size = false, 0, 0
			res.Header().Del(echo.HeaderContentType)
			res.Header().Del(echo.HeaderContentLength)
		}
		if !auth.Refused(verdict) {
			return verdict
		}
		// Refused: verify from the token's row, which says why.
		a.auth.Forget(p.TokenID)
		if _, err := a.auth.Authenticate(ctx, bearer); err != nil {
			if errors.Is(err, wgerr.Unauthenticated) {
				a.throttle.Fail(addr)
				c.Set(quietKey, true)
			}
			return err
		}
		// The token's row changed under the request (edited in the
		// database) but is valid: nothing was done; the retry is verified
		// afresh.
		res.Header().Set("Retry-After", "1")
		return wgerr.New(wgerr.CodeUnavailable, "the token changed while the request ran; nothing was changed: retry")
	}
}

// checkedWriter holds an answer back until the request's token check has
// passed: the first write judges it (auth.Service.Confirm) when no
// statement did, and swallows the answer when it did not pass.
type checkedWriter struct {
	http.ResponseWriter
	confirm func() error
	judged  bool
	verdict error
}

func (w *checkedWriter) pass() bool {
	if !w.judged {
		w.judged, w.verdict = true, w.confirm()
	}
	return w.verdict == nil
}

func (w *checkedWriter) WriteHeader(code int) {
	if w.pass() {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *checkedWriter) Write(p []byte) (int, error) {
	if w.pass() {
		return w.ResponseWriter.Write(p)
	}
	return len(p), nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *checkedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
