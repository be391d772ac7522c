package web

import (
	"fmt"
	"html/template"
	"time"
)

// relTime shows an instant as a <time> element: its text is the instant
// relative to now ("4 min ago", "in 3 h"), its datetime attribute and title
// the absolute instant in ISO 8601 UTC (reltime.js refreshes the text every
// 30 s and adds the reader's local time to the title). It takes a
// time.Time or a *time.Time; the zero time and nil show nothing.
//
// The text is rendered by the server against the request's now, so a page
// read without JavaScript is right when it is sent.
func relTime(v any, now time.Time) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	default:
		return ""
	}
	if t.IsZero() {
		return ""
	}
	iso := t.UTC().Format(time.RFC3339)
	// The values are digits, letters and punctuation of our own formats:
	// nothing in them needs escaping.
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s" data-rel>%s</time>`,
		iso, t.UTC().Format("2006-01-02 15:04:05 UTC"), relText(t.Sub(now), t)))
}

// ago says how long before now t was, as relText does ("just now", "4 min
// ago"), for a time the database stamped: measured against the replica's
// clock (r.now), which may be behind the database's, a t after now reads
// as just now, never as a time to come.
func (r *req) ago(t time.Time) string {
	return relText(min(t.Sub(r.now()), 0), t)
}

// relText says how far an instant d away from now is, in the largest whole
// unit: "just now", "42 s ago", "4 min ago", "3 h ago", "2 d ago", and for
// the future "in 42 s", "in 3 h". Beyond 30 days it is the date (UTC).
// reltime.js computes the same text in the browser.
func relText(d time.Duration, t time.Time) string {
	future := d > 0
	if d < 0 {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "min"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	case d < 30*24*time.Hour:
		n, unit = int64(d/(24*time.Hour)), "d"
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}
