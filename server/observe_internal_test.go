package server

import (
	"testing"

	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestDeliveryResult: every kind of attempt maps to its metrics result; a
// lost lock wins over what the attempt saw (another attempt counts).
func TestDeliveryResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    webhook.Attempt
		want string
	}{
		{webhook.Attempt{State: webhook.StateDelivered, Sent: true}, metrics.DeliveryDelivered},
		{webhook.Attempt{State: webhook.StatePending, Sent: true}, metrics.DeliveryRetry},
		{webhook.Attempt{State: webhook.StateFailed, Sent: true}, metrics.DeliveryFailed},
		{webhook.Attempt{State: webhook.StateFailed, Refused: true}, metrics.DeliveryRefused},
		{webhook.Attempt{State: "", Refused: true}, metrics.DeliveryLost},
		{webhook.Attempt{State: "", Sent: true}, metrics.DeliveryLost},
		{webhook.Attempt{State: "", Sent: true, Released: true}, metrics.DeliveryReleased},
	} {
		if got := deliveryResult(tc.a); got != tc.want {
			t.Errorf("deliveryResult(%+v) = %s, want %s", tc.a, got, tc.want)
		}
	}
}
