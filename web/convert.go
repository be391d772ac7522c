package web

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// parseVersion reads an item version a form carries (1 and up).
func parseVersion(s string) (int32, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	return int32(v), err == nil && v >= 1
}

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

func parsePriority(s string) (int32, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("The priority must be between %d and %d (higher goes first).", math.MinInt32, math.MaxInt32)
	}
	if err != nil {
		return 0, errors.New("The priority must be a whole number (higher goes first).")
	}
	return int32(v), nil
}

func notFoundf(format string, args ...any) error {
	return wgerr.New(wgerr.CodeNotFound, format, args...)
}

// userMessage is the message of an error a person can act on (bad input,
// a conflict, a missing record), to show beside the form; ok is false for
// anything else.
func userMessage(err error) (string, bool) {
	var we *wgerr.Error
	if !errors.As(err, &we) {
		return "", false
	}
	switch we.Code {
	case wgerr.CodeInvalid, wgerr.CodeConflict, wgerr.CodeNotFound, wgerr.CodeAlreadyExists, wgerr.CodeDependencyCycle:
		msg := we.Message
		if we.Field != "" && !strings.Contains(msg, we.Field) {
			msg = we.Field + ": " + msg
		}
		return msg, true
	}
	return "", false
}
