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
