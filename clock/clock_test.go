package clock

import (
	"testing"
	"time"
)

func TestStub(t *testing.T) {
	t.Parallel()
	t.Run("UnsetIsDatabase", func(t *testing.T) {
		var s Stub
		if s.Now() != nil || (Database{}).Now() != nil {
			t.Fatal("an unset stub and the database clock must defer to the database (nil)")
		}
	})
	t.Run("SetAndAdvance", func(t *testing.T) {
		t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
		s := NewStub(t0)
		s.Advance(90 * time.Second)
		got := s.Now()
		if got == nil || !got.Equal(t0.Add(90*time.Second)) || got.Location() != time.UTC {
			t.Fatalf("Now() = %v, want %v in UTC", got, t0.Add(90*time.Second))
		}
		*got = time.Time{} // callers get a copy
		if s.Now().IsZero() {
			t.Fatal("Now returned the stub's own time, not a copy")
		}
	})
}

// TestTyped: a duration is written as a person types it and
// time.ParseDuration reads it back: no "0m" or "0s" tails, whole seconds.
func TestTyped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{4 * time.Hour, "4h"},
		{90 * time.Minute, "1h30m"},
		{45 * time.Minute, "45m"},
		{45 * time.Second, "45s"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{1500 * time.Millisecond, "2s"},
		{0, "0s"},
	} {
		got := Typed(tc.d)
		if got != tc.want {
			t.Errorf("Typed(%v) = %q, want %q", tc.d, got, tc.want)
		}
		back, err := time.ParseDuration(got)
		if err != nil || back != tc.d.Round(time.Second) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.d.Round(time.Second))
		}
	}
}
