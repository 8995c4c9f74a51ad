package discover

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sitepulse/scanner/netguard"
	"sitepulse/store"
)

// Discovery says how many pages it found before MAX_PAGES_PER_SCAN cut the list, so the scan
// can say "50 of 80 pages audited".
func TestDiscoveryPagesFound(t *testing.T) {
	var urls strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sitemap.xml" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "<urlset>%s</urlset>", strings.ReplaceAll(urls.String(), "{origin}", "http://"+r.Host))
	}))
	defer srv.Close()
	for i := range 80 {
		fmt.Fprintf(&urls, "<url><loc>{origin}/p%02d</loc></url>", i)
	}
	d := Discovery{MaxPages: 50, Client: netguard.Guard{AllowPrivate: true}.Client()}
	for _, tt := range []struct {
		name          string
		site          store.Site
		pages, found  int
		source, first string
	}{
		{"a sitemap of 80 pages", store.Site{Domain: srv.URL}, 50, 80, "sitemap", "/p00"},
		{"a saved list under the cap", store.Site{Domain: srv.URL, Pages: []string{"/a", "/b", "/a"}}, 2, 2, "saved", "/a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pages, found, source, _ := d.PagesFound(context.Background(), tt.site)
			if len(pages) != tt.pages || found != tt.found || source != tt.source || pages[0] != tt.first {
				t.Errorf("%d pages from %s (first %s), %d found; want %d from %s, %d found", len(pages), source, pages[0], found, tt.pages, tt.source, tt.found)
			}
		})
	}
}
