package fence

import "time"

// SetClock stubs the clock a KeySet judges MinRefetch and MaxAge by.
func (s *KeySet) SetClock(now func() time.Time) { s.now = now }
