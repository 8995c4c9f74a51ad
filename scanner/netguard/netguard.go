// Package netguard is the outbound guard every user-directed request goes through: it refuses
// loopback, private and other internal addresses, re-checked on every redirect.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Guard keeps requests made on a user's behalf (sitemaps, their redirects, the Lighthouse
// target) away from the service's own network: loopback, private, link-local (cloud metadata),
// unique-local, unspecified, multicast and reserved addresses, IPv4 and IPv6.
// The check runs on the resolved address when a connection is made, so a host that resolves,
// re-resolves or redirects there is refused too. The zero Guard refuses them; AllowPrivate
// (SCAN_ALLOW_PRIVATE=true) is for self-hosters who audit intranet or staging sites. The
// service's own configured endpoints (PSI, SMTP) are trusted configuration and do not use it.
type Guard struct {
	AllowPrivate bool
	// Resolver answers the addresses of a host for CheckHost; nil is net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// Exempt is one address let through whatever it is: tests (of discover and lighthouse too)
	// use it for the loopback server that stands in for a public site, beside another that
	// stands in for an internal one. Never set from configuration.
	Exempt netip.AddrPort
}

// maxRedirects is how many redirects a guarded fetch follows, each to a re-checked address.
const maxRedirects = 3

// BlockedError is a refused outbound request: the host and the address it resolved to.
type BlockedError struct {
	Host   string
	Addr   netip.Addr
	Reason string // "loopback", "private", ...
}

// Error says which host was refused and what kind of address it resolves to, never the address:
// whoever can make the service resolve a name (a channel URL, a sitemap) would otherwise read
// the service's internal DNS through it. A host that is an address literal is named as written.
func (e *BlockedError) Error() string {
	if a, err := netip.ParseAddr(strings.Trim(e.Host, "[]")); err == nil && a.Unmap() == e.Addr {
		return fmt.Sprintf("refused to connect to %s: a %s address (SCAN_ALLOW_PRIVATE=true allows private sites)", e.Host, e.Reason)
	}
	return fmt.Sprintf("refused to connect to %s: it resolves to a %s address (SCAN_ALLOW_PRIVATE=true allows private sites)", e.Host, e.Reason)
}

// reserved are the ranges netip's predicates do not name that must not be reached either.
var reserved = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"}, // Alibaba's metadata is 100.100.100.200
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and broadcast
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},   // can reach any IPv4 address, internal ones too
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	// IPv4-compatible IPv6 (deprecated, RFC 4291 §2.5.5.1): some stacks route ::a.b.c.d to the
	// IPv4 address a.b.c.d, internal ones too. :: and ::1 are named by the checks before.
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
}

// BlockedReason says why a request may not reach a, or "" when a is a public address. An
// IPv4-mapped IPv6 address is judged as its IPv4 address.
func BlockedReason(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	}
	for _, r := range reserved {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	return ""
}

// check refuses the address of a connection about to be made to host.
func (g Guard) check(host string, ap netip.AddrPort) error {
	if g.AllowPrivate || ap == g.Exempt {
		return nil
	}
	if reason := BlockedReason(ap.Addr()); reason != "" {
		return &BlockedError{Host: host, Addr: ap.Addr().Unmap(), Reason: reason}
	}
	return nil
}

// Client is an HTTP client whose every connection is checked, that follows at most three
// redirects (each checked again when it connects), ignores proxy settings (a proxy would
// connect for it) and gives up after 15 s.
func (g Guard) Client() *http.Client {
	return &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, DialContext: g.DialContext, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 15 * time.Second,
			MaxIdleConns: 20, IdleConnTimeout: 60 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("refused a redirect to %s", req.URL.Scheme)
			}
			return nil
		},
	}
}

// DialContext connects to address (host:port) unless the address it resolves to is refused:
// the check runs on each resolved address just before the connection is made, so DNS
// rebinding cannot slip past it. It is the dialer of Client and of Chrome's proxy.
func (g Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(address)
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, resolved string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(resolved)
			if err != nil {
				return fmt.Errorf("refused to connect to %s: unparsable address %q", host, resolved)
			}
			return g.check(host, ap)
		}}
	conn, err := d.DialContext(ctx, network, address)
	return conn, quiet(err)
}

// quiet is a dial or lookup error without the addresses it would name: a refusal as itself
// (not inside "dial tcp <resolved address>: ..."), and a failed lookup without the resolver's
// address ("lookup x on 10.96.0.10:53"). Either would map the service's network for whoever
// chose the URL.
func quiet(err error) error {
	var blocked *BlockedError
	if errors.As(err, &blocked) {
		return blocked
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.Server != "" {
		c := *dns
		c.Server = ""
		return &c
	}
	return err
}

// CheckURL resolves the host of an http(s) URL and answers the address to pin the fetch to:
// an error when any of its addresses is refused (a host that answers both a public and an
// internal address could pick either), or when it resolves to none. With AllowPrivate it
// resolves nothing and answers the zero address.
func (g Guard) CheckURL(ctx context.Context, rawURL string) (host string, addr netip.Addr, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return "", netip.Addr{}, fmt.Errorf("refused %q: not an absolute URL", rawURL)
	}
	host = u.Hostname()
	if g.AllowPrivate {
		return host, netip.Addr{}, nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		r := g.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return host, netip.Addr{}, fmt.Errorf("resolve %s: %w", host, quiet(err))
		}
	}
	if len(addrs) == 0 {
		return host, netip.Addr{}, errors.New("resolve " + host + ": no addresses")
	}
	for _, a := range addrs {
		p, _ := netip.ParseAddrPort(net.JoinHostPort(a.String(), port))
		if err := g.check(host, p); err != nil {
			return host, netip.Addr{}, err
		}
	}
	return host, addrs[0].Unmap(), nil
}
