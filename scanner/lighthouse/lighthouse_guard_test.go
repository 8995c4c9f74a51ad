package lighthouse

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sitepulse/scanner/netguard"
)

// fakeResolver answers fixed addresses, as a DNS name under an attacker's control would.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range f[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestLighthouseRefusesInternalAddressesAndPinsChrome(t *testing.T) {
	internal, hits := internalService(t)
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	// The stand-in CLI records its arguments, then fetches its target as Chrome would.
	cli := filepath.Join(dir, "lh.sh")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\ncurl -s \"$1\" >/dev/null\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	resolver := fakeResolver{
		"rebind.test": {"93.184.216.34", "127.0.0.1"},
		"meta.test":   {"169.254.169.254"},
		"public.test": {"93.184.216.34"},
	}
	l := New(Config{Command: cli, Guard: netguard.Guard{Resolver: resolver}})
	for _, u := range []string{internal.URL + "/", "http://rebind.test/", "http://meta.test/latest/meta-data/", "http://[::1]/"} {
		_, err := l.Audit(context.Background(), u, "mobile")
		var blocked *netguard.BlockedError
		if !errors.As(err, &blocked) {
			t.Errorf("Audit(%s) error = %v, want a refusal", u, err)
		}
	}
	if _, err := os.Stat(argsFile); err == nil {
		t.Error("Lighthouse ran for an internal address")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0", n)
	}
	l.Audit(context.Background(), "https://public.test/pricing", "mobile")
	args, _ := os.ReadFile(argsFile)
	if want := `--host-resolver-rules="MAP public.test 93.184.216.34"`; !strings.Contains(string(args), want) {
		t.Errorf("Lighthouse args:\n%s\nwant Chrome pinned with %s", args, want)
	}
}
