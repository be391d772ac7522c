package fence

import (
	"errors"
	"fmt"
)

// Sentinels a caller tests with errors.Is.
var (
	// ErrStaleToken: the token is smaller than the resource's committed
	// high-water mark (a newer lease has already written there).
	ErrStaleToken = errors.New("fence: stale token")
	// ErrOperationConflict: the operation id was already applied with a
	// different payload.
	ErrOperationConflict = errors.New("fence: operation conflict")
	// ErrInvalidToken: the fence token is malformed, or not signed by a
	// key the destination trusts (forged).
	ErrInvalidToken = errors.New("fence: invalid token")
	// ErrWrongProject: the token was signed for another project than the
	// destination serves.
	ErrWrongProject = errors.New("fence: token of another project")
	// ErrInvalidAttempt: the attempt names no resource, a negative token,
	// an over-long operation id, or a resource or operation id that is
	// not UTF-8 text without NUL.
	ErrInvalidAttempt = errors.New("fence: invalid attempt")
)

// StaleTokenError is ErrStaleToken with the numbers.
type StaleTokenError struct {
	Resource  string
	Token     int64
	HighWater int64
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fence: token %d for %s is stale: %d was already admitted", e.Token, e.Resource, e.HighWater)
}

// Is makes errors.Is(err, ErrStaleToken) hold.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// OperationConflictError is ErrOperationConflict with the operation.
type OperationConflictError struct {
	Resource  string
	Operation string
}

func (e *OperationConflictError) Error() string {
	return fmt.Sprintf("fence: operation %q on %s was already applied with a different payload", e.Operation, e.Resource)
}

// Is makes errors.Is(err, ErrOperationConflict) hold.
func (e *OperationConflictError) Is(target error) bool { return target == ErrOperationConflict }
