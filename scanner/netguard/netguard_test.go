package netguard

import (
	"net/netip"

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
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
		{"2002:7f00:1::", "6to4"},
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
