package discover

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"sitepulse/store"
	"strings"
	"sync/atomic"
	"testing"

	"sitepulse/scanner/netguard"
)

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
func publicSite(t *testing.T, h http.Handler) (*httptest.Server, netguard.Guard) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, netguard.Guard{Exempt: netip.MustParseAddrPort(srv.Listener.Addr().String())}
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
			var blocked *netguard.BlockedError
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
	var blocked *netguard.BlockedError
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
