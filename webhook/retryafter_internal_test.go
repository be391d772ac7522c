package webhook

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfterCapped: a receiver's Retry-After is honoured up to
// maxBackoff, and a valid one beyond it is that cap. Seconds too many for
// an int (or for a Duration) used to be ignored, retrying in seconds a
// receiver that asked for the longest wait.
func TestRetryAfterCapped(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name, header string
		want         time.Duration
	}{
		{"OKSeconds", "600", 10 * time.Minute},
		{"OKDate", now.Add(20 * time.Minute).Format(http.TimeFormat), 20 * time.Minute},
		{"CapSeconds", "86400", maxBackoff},
		{"CapSecondsOverflowingADuration", "10000000000", maxBackoff},
		{"CapSecondsOverflowingAnInt", "99999999999999999999999999", maxBackoff},
		{"CapDateFarAhead", "Fri, 31 Dec 9999 23:59:59 GMT", maxBackoff},
		{"IgnoredNegative", "-5", 0},
		{"IgnoredJunk", "soon", 0},
		{"IgnoredDatePast", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"Absent", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := retryAfter(c.header, now); got != c.want {
				t.Fatalf("retryAfter(%q) = %s, want %s", c.header, got, c.want)
			}
		})
	}
}
