package web_test

import (
	"net/http"
	"testing"
)

// TestHistoryRangeBackwards: a history search whose "from" comes after
// its "to" (the two fields typed the wrong way round) is refused saying
// so, on the page and by the CSV export, instead of answering that no
// lease matches, as if nothing had run then; a range the right way round,
// or of one instant, is read.
func TestHistoryRangeBackwards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	for _, path := range []string{"/p/acme/leases", "/p/acme/leases.csv"} {
		r := b.get(path + "?since=2026-12-09T10:00&until=2026-12-01T10:00")
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, "until: is before from (2026-12-09T10:00): from and to are the other way round")
		for _, ok := range []string{"?since=2026-12-01T10:00&until=2026-12-09T10:00", "?since=2026-12-01T10:00&until=2026-12-01T10:00"} {
			wantStatus(t, b.get(path+ok), http.StatusOK)
		}
	}
}
