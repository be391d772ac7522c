package db

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// registerUTC makes a connection scan timestamptz values in UTC. pgx
// scans them in time.Local by default, and a time.Time is encoded in its
// location: a server run with TZ=Europe/Berlin would answer "+01:00"
// where the same server under UTC answers "Z". Every time the API, the
// web UI's data and webhook bodies emit comes from here (the database is
// the clock), so scanning in UTC gives them one form: RFC 3339 with "Z".
func registerUTC(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
		Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
}
