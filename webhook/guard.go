package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// RequestTimeout bounds one delivery attempt: connecting, sending and
// reading the answer's first bytes.
const RequestTimeout = 10 * time.Second

// ErrRefusedAddress is why a dial was refused: the address is loopback,
// link-local, private or otherwise not on the public internet.
var ErrRefusedAddress = errors.New("refused address")

// sharedSpace is 100.64.0.0/10 (carrier-grade NAT), which netip does not
// count as private; thisNetwork is 0.0.0.0/8 ("this host on this
// network", RFC 791: 0.0.0.0 reaches this host), which netip counts as
// global but for 0.0.0.0 itself.
var (
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

// IPv6 prefixes that reach IPv4 addresses: NAT64's well-known prefix
// (RFC 6052, the IPv4 address in the last 32 bits) and its local-use one
// (RFC 8215, never public), and 6to4 (RFC 3056, the IPv4 address in bits
// 16 to 47).
//
// And the two that carry an IPv4 address in their last 32 bits without a
// translator: IPv4-compatible (RFC 4291's deprecated ::a.b.c.d, which a
// host's automatic tunnel sends over IPv4) and IPv4-translated (SIIT's
// ::ffff:0:a.b.c.d, RFC 2765).
var (
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	nat64List    = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	v4Compatible = netip.MustParsePrefix("::/96")
	v4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// publicAddr reports whether a may be reached by a webhook: not loopback,
// link-local, private, shared (CGNAT), multicast or unspecified. An IPv4
// address mapped into IPv6, compatible or translated, or reached through
// NAT64 or 6to4, is judged as that IPv4 address; NAT64's local-use prefix
// is refused.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	switch b := a.As16(); {
	case !a.Is6():
	case nat64List.Contains(a):
		return false
	case nat64.Contains(a), v4Compatible.Contains(a), v4Translated.Contains(a):
		a = netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		a = netip.AddrFrom4([4]byte(b[2:6]))
	}
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() &&
		!a.IsLinkLocalUnicast() && !sharedSpace.Contains(a) && !thisNetwork.Contains(a)
}

// refusedHost is the reason the host of a webhook's URL may not be
// reached (nil: a public address, or a name, which is judged at dial
// time), read as the HTTP client and resolvers read it: mapped to ASCII as
// the client does before it dials when it is not ASCII (IDNA: "127。0。0。1"
// is 127.0.0.1), an IPv4 address in any form inet_aton and the WHATWG URL
// standard read ("127.1", "2130706433", "0x7f000001", "0177.0.0.1", a
// trailing dot), and localhost however it is spelled, names under it
// included (RFC 6761). allowPrivate (--webhooks-allow-private) lets
// private addresses and localhost through, but an IPv4 address written
// otherwise than a.b.c.d is refused all the same: Go's resolver looks it
// up as a name, so it would never be delivered.
func refusedHost(host string, allowPrivate bool) error {
	const allow = "(start the server with --webhooks-allow-private to allow it)"
	if a, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && !publicAddr(a) {
			return fmt.Errorf("%w: %s is not a public address %s", ErrRefusedAddress, a, allow)
		}
		return nil
	}
	name := host
	if !isASCII(name) {
		var err error
		if name, err = idna.Lookup.ToASCII(host); err != nil {
			return fmt.Errorf("%w: %q is not a valid host name (%v)", ErrBadHost, host, err)
		}
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if !allowPrivate && (name == "localhost" || strings.HasSuffix(name, ".localhost")) {
		return fmt.Errorf("%w: %s names this host %s", ErrRefusedAddress, host, allow)
	}
	a, ok := legacyIPv4(name)
	switch {
	case !ok:
		return nil
	case !allowPrivate && !publicAddr(a):
		return fmt.Errorf("%w: %s is %s, not a public address %s", ErrRefusedAddress, host, a, allow)
	case a.String() != host:
		return fmt.Errorf("%w: %s is read as the address %s by some resolvers and as a name by others; write %s", ErrBadHost, host, a, a)
	}
	return nil
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// ErrBadHost is why a webhook's host was refused although it is not a
// private address: it is no valid name, or an ambiguous way of writing an
// address.
var ErrBadHost = errors.New("ambiguous host")

// legacyIPv4 reads name as the IPv4 address inet_aton and the WHATWG URL
// standard make of it: one to four parts separated by dots, each decimal,
// octal (a leading 0) or hexadecimal (0x), the last filling the bytes the
// others left. ok is false for anything else (a name).
func legacyIPv4(name string) (a netip.Addr, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			p, base = p[2:], 16
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil || p == "" || strings.ContainsAny(p, "+-_") {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(nums) - 1
	var v uint64
	for i, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= nums[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
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
