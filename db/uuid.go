package db

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID makes a connection send github.com/google/uuid values in
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
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgUUID(u), true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}
