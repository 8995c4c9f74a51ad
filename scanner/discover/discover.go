// Package discover finds a site's pages: its configured paths, else its sitemaps, bounded and
// fetched through the outbound guard.
package discover

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"sitepulse/store"

	"sitepulse/scanner/netguard"
)

// SiteOrigin is the scheme and host pages of a site are fetched from: the domain as https, or
// the domain itself when it already is an origin ("http://127.0.0.1:8700").
func SiteOrigin(domain string) string {
	d := strings.TrimRight(strings.TrimSpace(domain), "/")
	if strings.HasPrefix(d, "http://") || strings.HasPrefix(d, "https://") {
		return d
	}
	return "https://" + d
}

// PageURL joins a site's origin and a page path.
func PageURL(site store.Site, path string) string {
	return SiteOrigin(site.Domain) + path
}

// Discovery finds the pages of a site to audit.
type Discovery struct {
	// Client fetches sitemaps on the user's behalf; nil means the zero Guard's client, which
	// refuses internal addresses.
	Client   *http.Client
	MaxPages int // MAX_PAGES_PER_SCAN; 0 means 50; also caps the children of a sitemap index read
}

// maxSitemap caps a sitemap download; the protocol's own limit is 50 MB, but 50 pages fit in far less.
const maxSitemap = 10 << 20

// Pages answers the site's saved paths; if none, the paths of https://{domain}/sitemap.xml
// (a sitemap index is followed one level, at most MaxPages children); if that fails or is
// empty, "/". At most MaxPages, in order, without duplicates. It never fails: a broken or
// refused sitemap (an internal address, a *BlockedError) falls back to "/", and the reason is
// returned beside the pages for the log.
func (d Discovery) Pages(ctx context.Context, site store.Site) (pages []string, source string, note error) {
	limit := d.MaxPages
	if limit <= 0 {
		limit = 50
	}
	if len(site.Pages) > 0 {
		return capPaths(site.Pages, limit), "saved", nil
	}
	client := d.Client
	if client == nil {
		client = netguard.Guard{}.Client()
	}
	paths, err := d.sitemap(ctx, client, SiteOrigin(site.Domain)+"/sitemap.xml", limit, 1)
	if len(paths) > 0 {
		return capPaths(paths, limit), "sitemap", err // err: children that failed or were refused
	}
	if err == nil {
		err = errors.New("sitemap lists no pages")
	}
	return []string{"/"}, "root", err
}

// sitemapDoc reads both a urlset and a sitemapindex: each lists <loc> elements.
type sitemapDoc struct {
	XMLName  xml.Name
	URLs     []string `xml:"url>loc"`
	Sitemaps []string `xml:"sitemap>loc"`
}

// sitemap reads one sitemap; an index's children are read one level down. Paths found beside
// a broken child come back with the child's error.
func (d Discovery) sitemap(ctx context.Context, client *http.Client, u string, limit, depth int) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("sitemap %s: %w", u, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sitemap %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sitemap %s: HTTP %d", u, resp.StatusCode)
	}
	var doc sitemapDoc
	if err := xml.NewDecoder(io.LimitReader(resp.Body, maxSitemap)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("sitemap %s: not a sitemap: %w", u, err)
	}
	var paths []string
	for _, loc := range doc.URLs {
		if p, ok := locPath(loc); ok {
			paths = append(paths, p)
		}
	}
	var childErrs []error
	if depth > 0 {
		for i, child := range doc.Sitemaps {
			if i >= limit || len(uniquePaths(paths)) >= limit {
				break
			}
			more, err := d.sitemap(ctx, client, strings.TrimSpace(child), limit, depth-1)
			if err != nil {
				childErrs = append(childErrs, err) // one broken child does not hide the others
				continue
			}
			paths = append(paths, more...)
		}
	}
	return paths, errors.Join(childErrs...)
}

// locPath is the path of a sitemap <loc>; results are keyed by path, so a query is dropped.
func locPath(loc string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(loc))
	if err != nil || u.Host == "" {
		return "", false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return p, true
}

func capPaths(paths []string, limit int) []string {
	out := uniquePaths(paths)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func uniquePaths(paths []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
