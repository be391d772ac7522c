package web

import (
	"testing"
	"time"
)

func TestRelTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		offset time.Duration // the instant minus now
		want   string
	}{
		"JustNow":          {0, "just now"},
		"UnderASecond":     {-900 * time.Millisecond, "just now"},
		"Seconds":          {-42 * time.Second, "42 s ago"},
		"LastSecond":       {-59*time.Second - 999*time.Millisecond, "59 s ago"},
		"Minute":           {-time.Minute, "1 min ago"},
		"Minutes":          {-4*time.Minute - 59*time.Second, "4 min ago"},
		"Hours":            {-3*time.Hour - 59*time.Minute, "3 h ago"},
		"Days":             {-2*24*time.Hour - 5*time.Hour, "2 d ago"},
		"LastDay":          {-(30*24*time.Hour - time.Second), "29 d ago"},
		"MonthOld":         {-30 * 24 * time.Hour, "2026-11-01"},
		"FutureSeconds":    {25 * time.Second, "in 25 s"},
		"FutureMinutes":    {2*time.Minute + 30*time.Second, "in 2 min"},
		"FutureHours":      {3*time.Hour + 10*time.Minute, "in 3 h"},
		"FutureDays":       {3 * 24 * time.Hour, "in 3 d"},
		"FutureFarAway":    {45 * 24 * time.Hour, "2027-01-15"},
		"OtherZoneSameNow": {0, "just now"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			at := now.Add(tc.offset)
			if name == "OtherZoneSameNow" {
				at = at.In(time.FixedZone("UTC+5", 5*3600))
			}
			if got := relText(at.Sub(now), at); got != tc.want {
				t.Errorf("relText(%v) = %q, want %q", tc.offset, got, tc.want)
			}
		})
	}
}

func TestRelTimeElement(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	at := time.Date(2026, 12, 1, 17, 56, 30, 0, time.FixedZone("UTC+5", 5*3600)) // 12:56:30 UTC

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		want := `<time datetime="2026-12-01T12:56:30Z" title="2026-12-01 12:56:30 UTC" data-rel>3 min ago</time>`
		if got := string(relTime(at, now)); got != want {
			t.Errorf("relTime = %s\nwant %s", got, want)
		}
	})
	t.Run("Pointer", func(t *testing.T) {
		t.Parallel()
		if got, want := relTime(&at, now), relTime(at, now); got != want {
			t.Errorf("relTime(&t) = %s, want %s", got, want)
		}
	})
	t.Run("NilZeroAndOtherTypes", func(t *testing.T) {
		t.Parallel()
		var none *time.Time
		for _, v := range []any{none, time.Time{}, "2026-12-01", nil} {
			if got := relTime(v, now); got != "" {
				t.Errorf("relTime(%#v) = %q, want nothing", v, got)
			}
		}
	})
}
