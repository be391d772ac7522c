package wgerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestIs(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", New(CodeLeaseLost, "lease %d has ended", 7))
	if !errors.Is(err, LeaseLost) {
		t.Fatal("a wrapped lease_lost error is not LeaseLost")
	}
	if errors.Is(err, NotFound) {
		t.Fatal("a lease_lost error matches NotFound")
	}
	if CodeOf(err) != CodeLeaseLost || CodeOf(errors.New("plain")) != CodeInternal {
		t.Fatal("CodeOf")
	}
	f := InvalidField("epoch", "must be at least %d", 1)
	if f.Field != "epoch" || f.Error() != "epoch: must be at least 1" || !errors.Is(f, Invalid) {
		t.Fatalf("InvalidField: %+v", f)
	}
}
