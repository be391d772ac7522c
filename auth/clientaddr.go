package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies whose X-Forwarded-For and
// X-Forwarded-Proto headers the server believes: a request whose
// connection comes from one of them is counted (auth.Throttle) and logged
// under the client address X-Forwarded-For names, and its cookies are
// Secure when X-Forwarded-Proto says https (Secure). The zero value trusts
// no one: every request is its connection's peer, and over TLS exactly
// when its connection is.
//
// Only X-Forwarded-For and X-Forwarded-Proto are read. Forwarded (RFC
// 7239) and X-Real-Ip are ignored, even from a trusted proxy: a proxy that
// sends only those is one whose clients all share its address.
type Proxies struct {
	prefixes []netip.Prefix
}

// ParseProxies reads a comma-separated list of IP addresses and CIDR
// ranges ("10.0.0.0/8, 192.0.2.7, fd00::/8"); an address alone is a range
// of one. The empty (or blank) list trusts no one.
//
// Errors: an entry that is neither an address nor a range (an empty one
// between commas, a host name, a zone, a prefix length out of range),
// named in the error.
func ParseProxies(list string) (Proxies, error) {
	var p Proxies
	if strings.TrimSpace(list) == "" {
		return p, nil
	}
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		prefix, err := parseProxy(entry)
		if err != nil {
			return Proxies{}, err
		}
		p.prefixes = append(p.prefixes, prefix)
	}
	return p, nil
}

// parseProxy reads one entry of ParseProxies.
func parseProxy(entry string) (netip.Prefix, error) {
	bad := fmt.Errorf("%q is not an IP address or a CIDR range (e.g. 10.0.0.0/8, 192.0.2.7, fd00::/8)", entry)
	if entry == "" {
		return netip.Prefix{}, fmt.Errorf("an empty entry: %w", bad)
	}
	if strings.Contains(entry, "/") {
		prefix, err := netip.ParsePrefix(entry)
		if err != nil {
			return netip.Prefix{}, bad
		}
		if prefix.Addr().Is4In6() {
			prefix = netip.PrefixFrom(prefix.Addr().Unmap(), max(prefix.Bits()-96, 0))
		}
		return prefix.Masked(), nil
	}
	addr, err := netip.ParseAddr(entry)
	if err != nil || addr.Zone() != "" {
		return netip.Prefix{}, bad
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// String is the list as ParseProxies reads it back, ranges in canonical
// form ("" when no one is trusted).
func (p Proxies) String() string {
	parts := make([]string, len(p.prefixes))
	for i, prefix := range p.prefixes {
		parts[i] = prefix.String()
	}
	return strings.Join(parts, ",")
}

// trusts reports whether addr is one of the proxies.
func (p Proxies) trusts(addr netip.Addr) bool {
	for _, prefix := range p.prefixes {
		if prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// Client is the address of the client that sent r: the connection's peer,
// unless the peer is a trusted proxy. Then X-Forwarded-For (all its lines,
// in order, as one list) is walked from the right, each proxy having
// appended the address it received the request from: the first address
// that is not a trusted proxy is the client, and when every one is, the
// leftmost. An entry that is not an address (garbage, an empty entry, a
// host name), met before the client is found, makes the peer the client:
// what a trusted proxy appended is never malformed, so the list was not
// written by the proxies alone. Entries left of the client are never
// read: the client wrote them. IPv4-mapped IPv6 addresses are read as
// IPv4, zones are dropped, and an "address:port" entry (some proxies add
// the port) is read as its address.
//
// The invalid Addr when the peer itself is not an IP address (a test's
// or a unix socket's RemoteAddr).
func (p Proxies) Client(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() || len(p.prefixes) == 0 || !p.trusts(peer) {
		return peer
	}
	lines := r.Header.Values("X-Forwarded-For")
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for {
			entry := line
			cut := strings.LastIndexByte(line, ',')
			if cut >= 0 {
				entry, line = line[cut+1:], line[:cut]
			}
			addr := forwardedAddr(strings.TrimSpace(entry))
			if !addr.IsValid() {
				return peer
			}
			client = addr
			if !p.trusts(addr) {
				return client
			}
			if cut < 0 {
				break
			}
		}
	}
	return client
}

// peerAddr reads a connection's RemoteAddr ("host:port"; a bare host is
// taken too): the invalid Addr when the host is not an IP address.
func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap().WithZone("")
}

// forwardedAddr reads one X-Forwarded-For entry: an address, "[v6]",
// "v4:port" or "[v6]:port"; the invalid Addr for anything else.
func forwardedAddr(entry string) netip.Addr {
	if addr, err := netip.ParseAddr(entry); err == nil {
		return addr.Unmap().WithZone("")
	}
	if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
		if addr, err := netip.ParseAddr(entry[1 : len(entry)-1]); err == nil && addr.Is6() {
			return addr.Unmap().WithZone("")
		}
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(entry); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	return netip.Addr{}
}

type clientKey struct{}

// client is what WithClient records of a request: its client address, and
// whether its connection's peer is a trusted proxy.
type client struct {
	addr     netip.Addr
	viaProxy bool
}

// WithClient returns r with its client address (Proxies.Client) recorded
// in its context, where ClientIP and ClientAddr read it, and whether its
// peer is a trusted proxy, which Secure reads. The server records it once
// for every request, before any handler.
func WithClient(r *http.Request, p Proxies) *http.Request {
	peer := peerAddr(r.RemoteAddr)
	c := client{addr: p.Client(r), viaProxy: peer.IsValid() && p.trusts(peer)}
	return r.WithContext(context.WithValue(r.Context(), clientKey{}, c))
}

// ClientIP is the address of the client that sent r as WithClient
// recorded it; without a record, the connection's peer (forwarded headers
// are never believed then). The invalid Addr when that is not an IP
// address.
func ClientIP(r *http.Request) netip.Addr {
	if c, ok := r.Context().Value(clientKey{}).(client); ok {
		return c.addr
	}
	return peerAddr(r.RemoteAddr)
}

// Secure reports whether the client reached the server over TLS: the
// connection's own TLS, or, when WithClient recorded that the peer is a
// trusted proxy, the proxy's X-Forwarded-Proto saying "https" (case
// aside) for the client's own hop. A header from any other peer, or on a
// request WithClient has not seen, is never believed.
//
// Behind a chain of proxies each one appends the scheme it was reached
// by ("https, http": the client used TLS to the first proxy, which spoke
// plain HTTP to the next), so the client's hop is the first entry of the
// first header line; a proxy that overwrites the header sends that entry
// alone. Only the client's own session hangs on a first entry it wrote
// itself: a Secure cookie that its plain HTTP connection does not keep.
func Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	c, ok := r.Context().Value(clientKey{}).(client)
	if !ok || !c.viaProxy {
		return false
	}
	first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(first), "https")
}

// ClientAddr is the key a Throttle counts a request under: its client
// address (ClientIP), an IPv6 address by its /64 (one host usually holds
// all of it); the host of RemoteAddr as it is when that is not an IP
// address.
func ClientAddr(r *http.Request) string {
	addr := ClientIP(r)
	switch {
	case !addr.IsValid():
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	case addr.Is4():
		return addr.String()
	}
	return netip.PrefixFrom(addr, 64).Masked().String()
}
