package scanner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sitepulse/store"
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

// internalService stands in for a service on the scanner's own network; it counts what reaches it.
func internalService(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<urlset><url><loc>http://internal/admin/secret-token</loc></url></urlset>`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// publicSite stands in for a public site: a loopback server the guard is told to let through.
func publicSite(t *testing.T, h http.Handler) (*httptest.Server, Guard) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, Guard{exempt: netip.MustParseAddrPort(srv.Listener.Addr().String())}
}

func TestDiscoveryRefusesInternalAddresses(t *testing.T) {
	internal, hits := internalService(t)
	port := internal.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	for _, domain := range []string{
		internal.URL,
		"http://localhost:" + port,
		"http://[::1]:" + port,
		"http://0.0.0.0:" + port,
		"http://127.1:" + port,
		"http://2130706433:" + port,
		"http://[::ffff:127.0.0.1]:" + port,
		"169.254.169.254",
	} {
		t.Run(domain, func(t *testing.T) {
			pages, source, note := Discovery{}.Pages(context.Background(), store.Site{Domain: domain})
			if strings.Join(pages, ",") != "/" || source != "root" || note == nil {
				t.Errorf("pages = %v from %s (%v), want / from root with a reason", pages, source, note)
			}
			var blocked *BlockedError
			if !errors.As(note, &blocked) && !strings.Contains(note.Error(), "no such host") {
				t.Errorf("note = %v, want a refusal", note)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0", n)
	}
}

func TestDiscoveryRefusesRedirectsAndChildrenToInternalAddresses(t *testing.T) {
	internal, hits := internalService(t)
	public, guard := publicSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sitemap.xml":
			fmt.Fprintf(w, `<sitemapindex><sitemap><loc>%s/child.xml</loc></sitemap><sitemap><loc>http://%s/redirect.xml</loc></sitemap></sitemapindex>`, internal.URL, r.Host)
		case "/redirect.xml":
			http.Redirect(w, r, internal.URL+"/sitemap.xml", http.StatusFound)
		}
	}))
	pages, source, note := Discovery{Client: guard.Client()}.Pages(context.Background(), store.Site{Domain: public.URL})
	var blocked *BlockedError
	if strings.Join(pages, ",") != "/" || source != "root" || !errors.As(note, &blocked) {
		t.Errorf("pages = %v from %s (%v), want / from root with a refusal", pages, source, note)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0", n)
	}
}

func TestGuardedFetchBounds(t *testing.T) {
	var hits atomic.Int64
	var index strings.Builder
	public, guard := publicSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/sitemap.xml":
			fmt.Fprint(w, index.String())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Run("at most three redirects are followed", func(t *testing.T) {
		hits.Store(0)
		_, err := guard.Client().Get(public.URL + "/loop")
		if err == nil || !strings.Contains(err.Error(), "stopped after 3 redirects") || hits.Load() != 4 {
			t.Errorf("err = %v after %d requests, want a stop after 4", err, hits.Load())
		}
	})
	t.Run("a sitemap index reads at most MAX_PAGES_PER_SCAN children", func(t *testing.T) {
		index.WriteString("<sitemapindex>")
		for i := range 500 {
			fmt.Fprintf(&index, "<sitemap><loc>%s/gone-%d.xml</loc></sitemap>", public.URL, i)
		}
		index.WriteString("</sitemapindex>")
		hits.Store(0)
		Discovery{Client: guard.Client(), MaxPages: 5}.Pages(context.Background(), store.Site{Domain: public.URL})
		if n := hits.Load(); n != 6 {
			t.Errorf("%d requests, want the index and 5 children", n)
		}
	})
}

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
	l := NewLighthouse(LighthouseConfig{Command: cli, Guard: Guard{Resolver: resolver}})
	for _, u := range []string{internal.URL + "/", "http://rebind.test/", "http://meta.test/latest/meta-data/", "http://[::1]/"} {
		_, err := l.Audit(context.Background(), u, "mobile")
		var blocked *BlockedError
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
