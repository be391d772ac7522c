package webhook_test

import (
	"errors"
	"testing"

	"github.com/workgraph-dev/workgraph/webhook"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{
		"127.0.0.1:80", "127.9.9.9:443", "10.1.2.3:80", "172.16.0.1:80", "192.168.1.1:80",
		"169.254.169.254:80", "100.64.0.1:80", "0.0.0.0:80", "[::1]:80", "[fe80::1]:80",
		"[fc00::1]:80", "[::ffff:127.0.0.1]:80", "[::ffff:10.0.0.1]:80", "224.0.0.1:80",
		// IPv4 reached through NAT64 (RFC 6052's well-known prefix, and
		// RFC 8215's local-use one) or 6to4: judged by the IPv4 inside.
		"[64:ff9b::7f00:1]:80", "[64:ff9b::a00:1]:80", "[64:ff9b::a9fe:a9fe]:80", "[64:ff9b:1::a00:1]:80",
		"[2002:a00:1::1]:80", "[2002:7f00:1::]:80",
		"[64:ff9b::a00:7]:80", "[64:ff9b:1::a00:7]:80", "[2002:7f00:1::1]:80", "[2002:a00:7::1]:80",
		// IPv4-compatible (::a.b.c.d, deprecated, routed to IPv4 by a
		// host's automatic tunnel) and IPv4-translated (SIIT) addresses.
		"[::7f00:1]:80", "[::a00:1]:80", "[::ffff:0:7f00:1]:80", "[::ffff:0:a9fe:a9fe]:80",
		// 0.0.0.0/8: "this network" (0.0.0.0 itself reaches this host).
		"0.0.0.1:80", "0.1.2.3:80", "[::ffff:0.1.2.3]:80",
	} {
		if err := webhook.Guard("tcp", addr, nil); !errors.Is(err, webhook.ErrRefusedAddress) {
			t.Errorf("Guard(%s) = %v, want refused", addr, err)
		}
	}
	for _, addr := range []string{"8.8.8.8:443", "[2606:4700:4700::1111]:443", "93.184.216.34:80",
		"[64:ff9b::808:808]:443", "[2002:808:808::1]:443"} {
		if err := webhook.Guard("tcp", addr, nil); err != nil {
			t.Errorf("Guard(%s) = %v, want allowed", addr, err)
		}
	}
}
