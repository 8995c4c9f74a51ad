package netguard

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestBlockedReason(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.0.0.2", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:10.1.2.3", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS metadata over IPv6
		{"169.254.169.254", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"100.100.100.200", "shared (carrier-grade NAT)"},
		{"100.64.0.1", "shared (carrier-grade NAT)"},
		{"192.0.0.8", "reserved"},  // IETF protocol assignments
		{"198.18.0.1", "reserved"}, // benchmarking, 198.18.0.0/15
		{"198.19.255.254", "reserved"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
		{"64:ff9b:1::a00:1", "NAT64"}, // local-use NAT64, 64:ff9b:1::/48
		{"2002:7f00:1::", "6to4"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"}, // 2001::/32
		{"::7f00:1", "IPv4-compatible"},                    // ::127.0.0.1, deprecated IPv4-compatible IPv6
		{"::a9fe:a9fe", "IPv4-compatible"},                 // ::169.254.169.254
		{"::808:808", "IPv4-compatible"},                   // even a public IPv4 address: the form is deprecated (RFC 4291 §2.5.5.1)
		{"192.0.1.1", ""},                                  // just past 192.0.0.0/24
		{"198.20.0.1", ""},                                 // just past 198.18.0.0/15
		{"2001:1::1", ""},                                  // just past 2001::/32
		{"::1:0:0:1", ""},                                  // just past ::/96
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
	}
	for _, tt := range tests {
		if got := BlockedReason(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("BlockedReason(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestEveryReservedRangeHasARow: each range of reserved is judged by at least one row of
// TestBlockedReason, so deleting a range fails a test; a range added without a row fails here.
func TestEveryReservedRangeHasARow(t *testing.T) {
	rows := []string{"0.1.2.3", "100.64.0.1", "192.0.0.8", "198.18.0.1", "240.0.0.1", "64:ff9b::a9fe:a9fe",
		"64:ff9b:1::a00:1", "2002:7f00:1::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "::7f00:1"}
	for _, r := range reserved {
		found := false
		for _, a := range rows {
			if r.prefix.Contains(netip.MustParseAddr(a)) {
				found = true
			}
		}
		if !found {
			t.Errorf("reserved range %s has no row in TestBlockedReason (add one, and its address here)", r.prefix)
		}
	}
}

// fixedResolver answers every host with the same addresses.
type fixedResolver []netip.Addr

func (f fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

// A refusal says why (the kind of address) but never which address a name resolves to: the
// channel form would otherwise map the service's internal DNS for anyone. An address typed
// as the host itself may be named: it is what the user wrote.
func TestRefusalNeverNamesTheResolvedAddress(t *testing.T) {
	for _, addr := range []string{"10.20.30.40", "169.254.169.254", "fd00:ec2::254", "127.0.0.1"} {
		g := Guard{Resolver: fixedResolver{netip.MustParseAddr(addr)}}
		_, _, err := g.CheckURL(context.Background(), "https://hooks.internal.example/x")
		if err == nil {
			t.Fatalf("%s: accepted", addr)
		}
		if msg := err.Error(); strings.Contains(msg, addr) || !strings.Contains(msg, "hooks.internal.example") || !strings.Contains(msg, "address") {
			t.Errorf("refusal %q: want the host and the kind of address, never %s", msg, addr)
		}
	}
	_, _, err := Guard{}.CheckURL(context.Background(), "https://10.1.2.3/x")
	if err == nil || !strings.Contains(err.Error(), "10.1.2.3") || !strings.Contains(err.Error(), "private") {
		t.Errorf("an IP literal: %v, want it named with its kind", err)
	}
	// At connect time (a name that resolved to a public address at save now resolves inside),
	// the dialer's error carries the refusal only, not the dial's "dial tcp <addr>:" prefix.
	_, err = Guard{}.Client().Get("http://localhost:9/")
	if err == nil || strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "::1") {
		t.Errorf("a refused connection: %v, want no resolved address", err)
	}
}
