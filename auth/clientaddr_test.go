package auth_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/auth"
)

// mustProxies is the parsed list, failing the test when it is refused.
func mustProxies(t *testing.T, list string) auth.Proxies {
	t.Helper()
	p, err := auth.ParseProxies(list)
	if err != nil {
		t.Fatalf("ParseProxies(%q): %v", list, err)
	}
	return p
}

// TestProxiesClient: the client of a request is its peer unless the peer
// is a trusted proxy; then X-Forwarded-For is walked from the right,
// skipping trusted proxies, and anything malformed met on the way makes
// the peer the client. Each spoofing case is a client writing addresses
// of its choosing into the header.
func TestProxiesClient(t *testing.T) {
	t.Parallel()
	const trusted = "10.0.0.0/8, 192.0.2.1, fd00::/8"
	for _, tc := range []struct {
		name      string
		noProxies bool     // trust no one, not the list above
		peer      string   // RemoteAddr
		xff       []string // X-Forwarded-For lines, in order
		extra     map[string]string
		want      string // the client address; "" for none (the invalid Addr)
	}{
		{name: "NoProxiesConfigured", noProxies: true, peer: "10.1.2.3:5000", xff: []string{"203.0.113.9"}, want: "10.1.2.3"},
		{name: "TrustedPeerNoHeader", peer: "10.1.2.3:5000", want: "10.1.2.3"},
		{name: "OneProxy", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9"}, want: "203.0.113.9"},
		{name: "SingleAddressEntry", peer: "192.0.2.1:443", xff: []string{"198.51.100.4"}, want: "198.51.100.4"},
		{name: "ChainOfTrustedProxies", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9, 10.9.9.9, 10.8.8.8"}, want: "203.0.113.9"},
		{name: "LinesJoinedInOrder", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9", "10.9.9.9"}, want: "203.0.113.9"},
		{name: "AllTrustedLeftmost", peer: "10.1.2.3:5000", xff: []string{"10.7.7.7, 10.9.9.9"}, want: "10.7.7.7"},
		{name: "IPv6Client", peer: "[fd00::1]:5000", xff: []string{"2001:db8::7"}, want: "2001:db8::7"},
		{name: "IPv6Bracketed", peer: "10.1.2.3:5000", xff: []string{"[2001:db8::7]"}, want: "2001:db8::7"},
		{name: "IPv6WithPort", peer: "10.1.2.3:5000", xff: []string{"[2001:db8::7]:8443"}, want: "2001:db8::7"},
		{name: "IPv4WithPort", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9:4711"}, want: "203.0.113.9"},
		{name: "MappedPeer", peer: "[::ffff:10.1.2.3]:5000", xff: []string{"203.0.113.9"}, want: "203.0.113.9"},
		{name: "MappedEntry", peer: "10.1.2.3:5000", xff: []string{"::ffff:203.0.113.9"}, want: "203.0.113.9"},
		{name: "MappedTrustedEntrySkipped", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9, ::ffff:10.9.9.9"}, want: "203.0.113.9"},
		{name: "ZoneDropped", peer: "10.1.2.3:5000", xff: []string{"fe80::1%eth0"}, want: "fe80::1"},
		{name: "SpacesAndTabs", peer: "10.1.2.3:5000", xff: []string{" 203.0.113.9 ,\t10.9.9.9 "}, want: "203.0.113.9"},

		// Spoofing: the client writes what it likes left of what the
		// proxies append, and a peer that is not a proxy writes all of it.
		{name: "SpoofUntrustedPeer", peer: "203.0.113.50:5000", xff: []string{"198.51.100.1"}, want: "203.0.113.50"},
		{name: "SpoofUntrustedPeerNamesProxy", peer: "203.0.113.50:5000", xff: []string{"10.1.2.3"}, want: "203.0.113.50"},
		{name: "SpoofPrependedAddress", peer: "10.1.2.3:5000", xff: []string{"198.51.100.1, 203.0.113.9"}, want: "203.0.113.9"},
		{name: "SpoofPrependedTrustedAddress", peer: "10.1.2.3:5000", xff: []string{"10.5.5.5, 203.0.113.9"}, want: "203.0.113.9"},
		{name: "SpoofEarlierLine", peer: "10.1.2.3:5000", xff: []string{"198.51.100.1", "203.0.113.9"}, want: "203.0.113.9"},
		{name: "SpoofGarbageLeftOfClient", peer: "10.1.2.3:5000", xff: []string{"not-an-ip, <script>, 203.0.113.9"}, want: "203.0.113.9"},
		{name: "SpoofOtherHeadersIgnored", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9"},
			extra: map[string]string{"Forwarded": "for=198.51.100.1", "X-Real-Ip": "198.51.100.2"}, want: "203.0.113.9"},
		{name: "ForwardedIgnored", peer: "10.1.2.3:5000", extra: map[string]string{"Forwarded": `for="[2001:db8::1]:4711";proto=https`}, want: "10.1.2.3"},
		{name: "XRealIPIgnored", peer: "10.1.2.3:5000", extra: map[string]string{"X-Real-Ip": "198.51.100.2"}, want: "10.1.2.3"},

		// Malformed: the peer, never an error.
		{name: "MalformedGarbage", peer: "10.1.2.3:5000", xff: []string{"garbage"}, want: "10.1.2.3"},
		{name: "MalformedEmptyValue", peer: "10.1.2.3:5000", xff: []string{""}, want: "10.1.2.3"},
		{name: "MalformedEmptyEntry", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9,,10.9.9.9"}, want: "10.1.2.3"},
		{name: "MalformedTrailingComma", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9,"}, want: "10.1.2.3"},
		{name: "MalformedAfterTrusted", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9, bogus, 10.9.9.9"}, want: "10.1.2.3"},
		{name: "MalformedHostName", peer: "10.1.2.3:5000", xff: []string{"client.example.com"}, want: "10.1.2.3"},
		{name: "MalformedUnknown", peer: "10.1.2.3:5000", xff: []string{"unknown"}, want: "10.1.2.3"},
		{name: "MalformedCIDR", peer: "10.1.2.3:5000", xff: []string{"203.0.113.0/24"}, want: "10.1.2.3"},
		{name: "MalformedBracketedV4", peer: "10.1.2.3:5000", xff: []string{"[203.0.113.9]"}, want: "10.1.2.3"},
		{name: "MalformedBadPort", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9:port"}, want: "10.1.2.3"},
		{name: "MalformedLong", peer: "10.1.2.3:5000", xff: []string{strings.Repeat("1", 10000)}, want: "10.1.2.3"},
		{name: "MalformedControl", peer: "10.1.2.3:5000", xff: []string{"203.0.113.9\x00"}, want: "10.1.2.3"},
		{name: "PeerNotAnAddress", peer: "pipe", xff: []string{"203.0.113.9"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			list := trusted
			if tc.noProxies {
				list = ""
			}
			p := mustProxies(t, list)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for _, line := range tc.xff {
				r.Header.Add("X-Forwarded-For", line)
			}
			for k, v := range tc.extra {
				r.Header.Set(k, v)
			}
			got := p.Client(r)
			if (tc.want == "" && got.IsValid()) || (tc.want != "" && got.String() != tc.want) {
				t.Fatalf("peer %s, X-Forwarded-For %q: client %v, want %q", tc.peer, tc.xff, got, tc.want)
			}
			// The throttle's key and the log's address follow the
			// recorded client, never the header itself.
			if tc.want != "" {
				if ip := auth.ClientIP(auth.WithClient(r, p)); ip.String() != tc.want {
					t.Fatalf("ClientIP after WithClient = %v, want %s", ip, tc.want)
				}
			}
		})
	}
}

// TestClientAddr: without a recorded client (no WithClient) the key is the
// peer's, whatever the headers say; with one, the recorded client's, an
// IPv6 address by its /64.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.1.2.3:5000"
	r.Header.Set("X-Forwarded-For", "2001:db8:1:2:3:4:5:6")
	if got := auth.ClientAddr(r); got != "10.1.2.3" {
		t.Fatalf("no client recorded: key %q, want the peer 10.1.2.3", got)
	}
	if got := auth.ClientAddr(auth.WithClient(r, auth.Proxies{})); got != "10.1.2.3" {
		t.Fatalf("no proxies trusted: key %q, want the peer 10.1.2.3", got)
	}
	if got := auth.ClientAddr(auth.WithClient(r, mustProxies(t, "10.0.0.0/8"))); got != "2001:db8:1:2::/64" {
		t.Fatalf("behind a trusted proxy: key %q, want 2001:db8:1:2::/64", got)
	}
	r.RemoteAddr = "pipe"
	if got := auth.ClientAddr(auth.WithClient(r, mustProxies(t, "10.0.0.0/8"))); got != "pipe" {
		t.Fatalf("a peer that is no address: key %q, want it as it is", got)
	}
}

// TestSecure: a request is over TLS when its connection is, or when its
// peer is a trusted proxy (as WithClient recorded) that says
// X-Forwarded-Proto: https; the header of any other peer, or of a request
// WithClient has not seen, is not believed.
func TestSecure(t *testing.T) {
	t.Parallel()
	proxies := mustProxies(t, "10.0.0.0/8")
	for _, tc := range []struct {
		name     string
		peer     string
		proto    string // X-Forwarded-Proto; "" for none
		tls      bool
		recorded bool // WithClient has seen the request
		want     bool
	}{
		{name: "TrustedProxyHTTPS", peer: "10.1.2.3:5000", proto: "https", recorded: true, want: true},
		{name: "TrustedProxyHTTPSCase", peer: "10.1.2.3:5000", proto: " HTTPS ", recorded: true, want: true},
		{name: "TrustedProxyHTTP", peer: "10.1.2.3:5000", proto: "http", recorded: true, want: false},
		// A chain of proxies: each appends the scheme it was reached by,
		// so the first entry is the client's hop.
		{name: "ChainClientHTTPS", peer: "10.1.2.3:5000", proto: "https, http", recorded: true, want: true},
		{name: "ChainClientHTTPSNoSpace", peer: "10.1.2.3:5000", proto: "HTTPS,http,http", recorded: true, want: true},
		{name: "ChainClientHTTP", peer: "10.1.2.3:5000", proto: "http, https", recorded: true, want: false},
		{name: "ChainEmptyFirst", peer: "10.1.2.3:5000", proto: ", https", recorded: true, want: false},
		{name: "UntrustedPeerChain", peer: "203.0.113.9:5000", proto: "https, https", recorded: true, want: false},
		{name: "TrustedProxyNoHeader", peer: "10.1.2.3:5000", recorded: true, want: false},
		{name: "UntrustedPeerHTTPS", peer: "203.0.113.9:5000", proto: "https", recorded: true, want: false},
		{name: "NotRecorded", peer: "10.1.2.3:5000", proto: "https", want: false},
		{name: "PeerNoAddress", peer: "pipe", proto: "https", recorded: true, want: false},
		{name: "OwnTLS", peer: "203.0.113.9:5000", tls: true, recorded: true, want: true},
		{name: "OwnTLSNotRecorded", peer: "203.0.113.9:5000", proto: "http", tls: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			if tc.proto != "" {
				r.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			if !tc.tls {
				r.TLS = nil
			} else if r.TLS == nil {
				r.TLS = &tls.ConnectionState{}
			}
			if tc.recorded {
				r = auth.WithClient(r, proxies)
			}
			if got := auth.Secure(r); got != tc.want {
				t.Fatalf("Secure = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParseProxies: addresses and ranges are read (an address is a range
// of one, a range is masked to its network), and anything else is refused
// with the entry named.
func TestParseProxies(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		for in, want := range map[string]string{
			"":                                  "",
			"  ":                                "",
			"10.0.0.0/8":                        "10.0.0.0/8",
			"10.1.2.3/8":                        "10.0.0.0/8",
			"192.0.2.7":                         "192.0.2.7/32",
			" 10.0.0.0/8 ,192.0.2.7, fd00::/8 ": "10.0.0.0/8,192.0.2.7/32,fd00::/8",
			"::1":                               "::1/128",
			"::ffff:192.0.2.7":                  "192.0.2.7/32",
			"::ffff:10.0.0.0/104":               "10.0.0.0/8",
			"0.0.0.0/0":                         "0.0.0.0/0",
			"2001:db8::/32,2001:db8:1::1/128":   "2001:db8::/32,2001:db8:1::1/128",
		} {
			p, err := auth.ParseProxies(in)
			if err != nil || p.String() != want {
				t.Errorf("ParseProxies(%q) = %q, %v; want %q", in, p.String(), err, want)
			}
		}
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		for _, in := range []string{
			"10.0.0.0/33", "10.0.0/8", "10.0.0.0/", "/8", "proxy.example.com", "10.0.0.1,", ",10.0.0.1",
			"10.0.0.1,,10.0.0.2", "fe80::1%eth0", "10.0.0.1:80", "10.0.0.0/8 192.0.2.0/24", "fd00::/129", "*",
		} {
			_, err := auth.ParseProxies(in)
			if err == nil {
				t.Errorf("ParseProxies(%q) accepted", in)
				continue
			}
			if !strings.Contains(err.Error(), "not an IP address or a CIDR range") {
				t.Errorf("ParseProxies(%q): %v; want it to say what an entry must be", in, err)
			}
		}
	})
}
