package db

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID makes a connection send github.com/google/uuid values (and
// pointers to them, nil for NULL) in
// PostgreSQL's binary uuid format. Left alone, pgx encodes a uuid.UUID
// through its driver.Valuer (a 36-character string, after a failed attempt
// at the binary format that builds an error each time): a tenth of the
// process's CPU under load in the benchmark. (Reading needs nothing: the
// uuid codec scans into a uuid.UUID through its sql.Scanner.)
func registerUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncodePlan}, m.TryWrapEncodePlanFuncs...)
}

// pgUUID is a uuid.UUID that pgtype's uuid codec can encode.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) {
	return pgtype.UUID{Bytes: u, Valid: true}, nil
}

func tryWrapUUIDEncodePlan(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	switch u := value.(type) {
	case uuid.UUID:
		return &uuidEncodePlan{}, pgUUID(u), true
	case *uuid.UUID:
		return &uuidEncodePlan{}, pgUUID{}, true
	}
	return nil, nil, false
}

// uuidEncodePlan encodes a uuid.UUID, or a *uuid.UUID (nil: NULL).
type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	switch u := value.(type) {
	case uuid.UUID:
		return p.next.Encode(pgUUID(u), buf)
	case *uuid.UUID:
		if u == nil {
			return nil, nil
		}
		return p.next.Encode(pgUUID(*u), buf)
	}
	return nil, fmt.Errorf("db: cannot encode %T as a uuid", value)
}
