package wgerr

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestStatusTableCoversEveryCode(t *testing.T) {
	t.Parallel()
	for _, code := range []Code{
		CodeInvalid, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeAlreadyExists,
		CodeLeaseLost, CodeConflictingResult, CodeDependencyCycle, CodeConflict,
		CodePayloadTooLarge, CodeRateLimited, CodeUnavailable, CodeInternal,
		CodeInProgress, CodeOutcomeUnknown, CodeMethodNotAllowed, CodeBlocked,
		CodeUnsupportedMediaType, CodeHeaderTooLarge,
	} {
		if _, ok := answers[code]; !ok {
			t.Errorf("no table entry for %s", code)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err    error
		code   Code
		status int
	}{
		"LeaseLost":   {fmt.Errorf("wrapped: %w", New(CodeLeaseLost, "gone")), CodeLeaseLost, http.StatusConflict},
		"RateLimited": {RateLimited, CodeRateLimited, http.StatusTooManyRequests},
		"Unavailable": {Unavailable, CodeUnavailable, http.StatusServiceUnavailable},
		"Plain":       {errors.New("plain"), CodeInternal, http.StatusInternalServerError},
		"UnknownCode": {&Error{Code: "no_such_code"}, CodeInternal, http.StatusInternalServerError},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, status := HTTPStatus(tt.err)
			if code != tt.code || status != tt.status {
				t.Fatalf("HTTPStatus = %s %d, want %s %d", code, status, tt.code, tt.status)
			}
		})
	}
}
