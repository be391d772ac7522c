package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// RequestTimeout bounds one delivery attempt: connecting, sending and
// reading the answer's first bytes.
const RequestTimeout = 10 * time.Second

// ErrRefusedAddress is why a dial was refused: the address is loopback,
// link-local, private or otherwise not on the public internet.
var ErrRefusedAddress = errors.New("refused address")

// sharedSpace is 100.64.0.0/10 (carrier-grade NAT), which netip does not
// count as private.
var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// IPv6 prefixes that carry an IPv4 address a translator on the path turns
// back into it: NAT64's well-known prefix (RFC 6052, the address in the
// last 32 bits), 6to4 (RFC 3056, bits 16 to 48), and NAT64's local-use
// prefix (RFC 8215), whose layout is the network's own.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// publicAddr reports whether a may be reached by a webhook: not loopback,
// link-local, private, shared (CGNAT), multicast or unspecified. An IPv4
// address mapped into IPv6, or carried in a NAT64 or 6to4 address, is
// judged as IPv4 (through a translator, 64:ff9b::a00:7 reaches 10.0.0.7);
// NAT64's local-use prefix is not public.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	b := a.As16()
	switch {
	case !a.Is6():
	case nat64.Contains(a):
		a = netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		a = netip.AddrFrom4([4]byte(b[2:6]))
	case nat64Local.Contains(a):
		return false
	}
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() &&
		!a.IsLinkLocalUnicast() && !sharedSpace.Contains(a)
}

// refusedHost is the reason a host that is an address literal may not be
// reached (nil: a public address, or a name, which is judged at dial time).
func refusedHost(host string) error {
	a, err := netip.ParseAddr(host)
	if err != nil {
		if host == "localhost" {
			return fmt.Errorf("%w: localhost (start the server with --webhooks-allow-private to allow it)", ErrRefusedAddress)
		}
		return nil
	}
	if !publicAddr(a) {
		return fmt.Errorf("%w: %s is not a public address (start the server with --webhooks-allow-private to allow it)", ErrRefusedAddress, a)
	}
	return nil
}

// Guard is the dialer's Control: it refuses a connection to an address
// that is not public, after name resolution and for every address tried,
// so a name that resolves (or rebinds) to a private address cannot reach
// it.
func Guard(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	if !publicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s is not a public address", ErrRefusedAddress, ap.Addr())
	}
	return nil
}

// NewClient returns the HTTP client of delivery: no proxy from the
// environment, no redirects followed (a 3xx answer is the attempt's
// result), RequestTimeout per request, and unless allowPrivate, Guard on
// every connection.
func NewClient(allowPrivate bool) *http.Client {
	return newClient(allowPrivate, RequestTimeout, DefaultConcurrency)
}

// newClient is NewClient with timeout per request, keeping up to perHost
// idle connections to one receiver (one for each attempt that may be in
// flight, so a busy receiver's connections are reused, not redialled).
func newClient(allowPrivate bool, timeout time.Duration, perHost int) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = Guard
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          max(100, perHost),
		MaxIdleConnsPerHost:   perHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// dialRefused reports whether err is Guard's refusal.
func dialRefused(err error) bool {
	return errors.Is(err, ErrRefusedAddress)
}
