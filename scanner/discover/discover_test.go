package discover

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"sitepulse/store"

	"sitepulse/scanner/netguard"
)

func TestSiteOrigin(t *testing.T) {
	tests := []struct{ domain, want string }{
		{"example.com", "https://example.com"},
		{" example.com/ ", "https://example.com"},
		{"http://127.0.0.1:8700", "http://127.0.0.1:8700"},
		{"https://staging.example.com/", "https://staging.example.com"},
	}
	for _, tt := range tests {
		if got := SiteOrigin(tt.domain); got != tt.want {
			t.Errorf("SiteOrigin(%q) = %q, want %q", tt.domain, got, tt.want)
		}
	}
}

func TestDiscoverPages(t *testing.T) {
	sample, err := os.ReadFile("../../testdata/site/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	many := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`
	for i := range 80 {
		many += fmt.Sprintf("<url><loc>https://x.test/p%d</loc></url>", i)
	}
	many += `</urlset>`
	var routes map[string]string // path -> body; absent answers 404
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(strings.ReplaceAll(body, "{origin}", "http://"+r.Host)))
	}))
	defer srv.Close()

	tests := []struct {
		name       string
		pages      []string
		routes     map[string]string
		max        int
		want       []string
		wantSource string
	}{
		{name: "saved paths win over the sitemap", pages: []string{"/b", "a", "/b"},
			routes: map[string]string{"/sitemap.xml": string(sample)}, want: []string{"/b", "/a"}, wantSource: "saved"},
		{name: "the sample site's sitemap lists its five pages", routes: map[string]string{"/sitemap.xml": string(sample)},
			want: []string{"/", "/blog/", "/pricing", "/about", "/fast"}, wantSource: "sitemap"},
		{name: "a sitemap index is followed one level, broken children skipped",
			routes: map[string]string{
				"/sitemap.xml": `<sitemapindex><sitemap><loc>{origin}/a.xml</loc></sitemap><sitemap><loc>{origin}/gone.xml</loc></sitemap><sitemap><loc>{origin}/b.xml</loc></sitemap></sitemapindex>`,
				"/a.xml":       `<urlset><url><loc>{origin}/one</loc></url></urlset>`,
				"/b.xml":       `<urlset><url><loc>{origin}/two</loc></url><url><loc>{origin}/one</loc></url></urlset>`,
			}, want: []string{"/one", "/two"}, wantSource: "sitemap"},
		{name: "an index two levels deep stops after one",
			routes: map[string]string{
				"/sitemap.xml": `<sitemapindex><sitemap><loc>{origin}/nested.xml</loc></sitemap></sitemapindex>`,
				"/nested.xml":  `<sitemapindex><sitemap><loc>{origin}/deep.xml</loc></sitemap></sitemapindex>`,
				"/deep.xml":    `<urlset><url><loc>{origin}/deep</loc></url></urlset>`,
			}, want: []string{"/"}, wantSource: "root"},
		{name: "no sitemap falls back to the root", routes: map[string]string{}, want: []string{"/"}, wantSource: "root"},
		{name: "a broken sitemap falls back to the root", routes: map[string]string{"/sitemap.xml": "<urlset><url><loc>"},
			want: []string{"/"}, wantSource: "root"},
		{name: "an HTML page at /sitemap.xml falls back to the root", routes: map[string]string{"/sitemap.xml": "<!doctype html><p>hi"},
			want: []string{"/"}, wantSource: "root"},
		{name: "pages are capped at MAX_PAGES_PER_SCAN", routes: map[string]string{"/sitemap.xml": many}, max: 3,
			want: []string{"/p0", "/p1", "/p2"}, wantSource: "sitemap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes = tt.routes
			site := store.Site{Domain: srv.URL, Pages: tt.pages}
			got, source, _ := Discovery{MaxPages: tt.max, Client: netguard.Guard{AllowPrivate: true}.Client()}.Pages(context.Background(), site)
			if !reflect.DeepEqual(got, tt.want) || source != tt.wantSource {
				t.Errorf("pages = %v from %s, want %v from %s", got, source, tt.want, tt.wantSource)
			}
		})
	}
}
