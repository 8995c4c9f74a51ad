// Package discover finds a site's pages: its configured paths, else its sitemaps, bounded and
// fetched through the outbound guard.
package discover

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// Discovery finds the pages of a site to audit. One scan's discovery is bounded in time
// (Deadline), in XML read (MaxBytes, after gzip is decoded) and in children read at once
// (Fetches), since the sitemap belongs to a tenant who may make it slow, huge or a gzip bomb.
type Discovery struct {
	// Client fetches sitemaps on the user's behalf; nil means the zero Guard's client, which
	// refuses internal addresses.
	Client   *http.Client
	MaxPages int // MAX_PAGES_PER_SCAN; 0 means 50; also caps the children of a sitemap index read
	// Deadline is DISCOVERY_TIMEOUT_SECONDS: how long one scan's discovery may take, the index
	// and its children together. Default 30 s.
	Deadline time.Duration
	// MaxBytes is the XML one scan's discovery may read, decompressed, the index and its
	// children together. Default 10 MiB.
	MaxBytes int64
	// Fetches is how many child sitemaps one scan reads at once. Default 4.
	Fetches int
	// After starts the deadline's clock; nil uses a real timer. Tests inject their own.
	After func(time.Duration) <-chan time.Time
}

// Discovery's limits when none are configured.
const (
	DefaultDiscoveryDeadline = 30 * time.Second
	DefaultDiscoveryBytes    = 10 << 20
	defaultDiscoveryFetches  = 4
)

// LimitError says discovery stopped at one of its limits; the pages found before it are kept
// and audited, and the scan page shows this as its note.
type LimitError struct{ Limit string }

func (e *LimitError) Error() string {
	return "page discovery stopped at its " + e.Limit + "; the pages found before it were audited"
}

var errDiscoveryDeadline = errors.New("discovery deadline")

// Pages answers the site's saved paths; if none, the paths of https://{domain}/sitemap.xml
// (a sitemap index is followed one level, at most MaxPages children); if that fails or is
// empty, "/". At most MaxPages, in order, without duplicates. It never fails: a broken or
// refused sitemap (an internal address, a *BlockedError) falls back to "/", and the reason is
// returned beside the pages for the log; a *LimitError among them says a limit stopped it.
func (d Discovery) Pages(ctx context.Context, site store.Site) (pages []string, source string, note error) {
	pages, _, source, note = d.PagesFound(ctx, site)
	return pages, source, note
}

// PagesFound is Pages with how many pages were found before MAX_PAGES_PER_SCAN cut the list,
// for the scan's pages to say so. A sitemap index is read only until the cap is reached, so
// found is then at least the cap, not every page of every child.
func (d Discovery) PagesFound(ctx context.Context, site store.Site) (pages []string, found int, source string, note error) {
	limit := d.MaxPages
	if limit <= 0 {
		limit = 50
	}
	if len(site.Pages) > 0 {
		return capPaths(site.Pages, limit), len(uniquePaths(site.Pages)), "saved", nil
	}
	client := d.Client
	if client == nil {
		client = netguard.Guard{}.Client()
	}
	deadline := cmp.Or(d.Deadline, DefaultDiscoveryDeadline)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var fire <-chan time.Time
	if d.After != nil {
		fire = d.After(deadline)
	} else {
		t := time.NewTimer(deadline)
		defer t.Stop()
		fire = t.C
	}
	go func() {
		select {
		case <-fire:
			stop(errDiscoveryDeadline)
		case <-ctx.Done():
		}
	}()
	r := &sitemapRun{d: d, client: client, limit: limit, budget: newByteBudget(cmp.Or(d.MaxBytes, DefaultDiscoveryBytes))}
	paths, err := r.sitemap(ctx, SiteOrigin(site.Domain)+"/sitemap.xml", 1)
	switch {
	case errors.Is(context.Cause(ctx), errDiscoveryDeadline):
		err = &LimitError{Limit: fmt.Sprintf("deadline of %s", deadline)}
	case r.budget.spent():
		err = &LimitError{Limit: fmt.Sprintf("budget of %s of sitemap XML", mib(r.budget.max))}
	}
	if len(paths) > 0 {
		return capPaths(paths, limit), len(uniquePaths(paths)), "sitemap", err // err: children that failed or were refused
	}
	if err == nil {
		err = errors.New("sitemap lists no pages")
	}
	return []string{"/"}, 1, "root", err
}

// mib writes a byte count in MiB: "10 MiB".
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// sitemapRun is one scan's discovery: its client, page cap and byte budget.
type sitemapRun struct {
	d      Discovery
	client *http.Client
	limit  int
	budget *byteBudget
	found  atomic.Int64 // pages found in children so far, to stop reading more
}

// sitemap reads one sitemap; an index's children are read one level down, Fetches at a time.
// Paths found beside a broken child come back with the child's error, in the index's order.
func (r *sitemapRun) sitemap(ctx context.Context, u string, depth int) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("sitemap %s: %w", u, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sitemap %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sitemap %s: HTTP %d", u, resp.StatusCode)
	}
	locs, children, err := parseSitemap(r.budget.reader(resp.Body))
	var paths []string
	for _, loc := range locs {
		if p, ok := locPath(loc); ok {
			paths = append(paths, p)
		}
	}
	if err != nil {
		return paths, fmt.Errorf("sitemap %s: %w", u, err)
	}
	if depth == 0 || len(children) == 0 {
		return paths, nil
	}
	children = children[:min(len(children), r.limit)]
	r.found.Add(int64(len(uniquePaths(paths))))
	more := make([][]string, len(children))
	errs := make([]error, len(children))
	sem := make(chan struct{}, cmp.Or(r.d.Fetches, defaultDiscoveryFetches))
	var wg sync.WaitGroup
	for i, child := range children {
		sem <- struct{}{}
		if ctx.Err() != nil || r.budget.spent() || r.found.Load() >= int64(r.limit) {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			more[i], errs[i] = r.sitemap(ctx, strings.TrimSpace(child), depth-1)
			r.found.Add(int64(len(more[i])))
		}()
	}
	wg.Wait()
	for _, m := range more {
		paths = append(paths, m...)
	}
	return paths, errors.Join(errs...) // one broken child does not hide the others
}

// parseSitemap streams the <loc> of a urlset's <url>s and of a sitemapindex's <sitemap>s, so
// what was read before an error (the budget, the deadline, a truncated body) is kept.
func parseSitemap(body io.Reader) (locs, children []string, err error) {
	dec := xml.NewDecoder(body)
	var path []string // local names of the open elements
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return locs, children, nil
		}
		if err != nil {
			return locs, children, fmt.Errorf("not a sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "loc" && len(path) == 2 {
				var loc string
				if err := dec.DecodeElement(&loc, &t); err != nil {
					return locs, children, fmt.Errorf("not a sitemap: %w", err)
				}
				switch path[1] {
				case "url":
					locs = append(locs, loc)
				case "sitemap":
					children = append(children, loc)
				}
				continue
			}
			path = append(path, t.Name.Local)
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		}
	}
}

// byteBudget is the XML one scan's discovery may still read, shared by its fetches.
type byteBudget struct {
	max  int64
	left atomic.Int64
}

// errBudget ends a read past the budget.
var errBudget = errors.New("the discovery's byte budget is spent")

func newByteBudget(max int64) *byteBudget {
	b := &byteBudget{max: max}
	b.left.Store(max)
	return b
}

func (b *byteBudget) spent() bool { return b.left.Load() <= 0 }

// reader decodes gzip (a .xml.gz body; Content-Encoding is decoded by the transport) and
// counts the decoded bytes against the budget, so a gzip bomb stops at it.
func (b *byteBudget) reader(body io.Reader) io.Reader {
	br := bufio.NewReader(body)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return &budgetReader{r: errReader{err}, b: b}
		}
		return &budgetReader{r: z, b: b}
	}
	return &budgetReader{r: br, b: b}
}

type budgetReader struct {
	r io.Reader
	b *byteBudget
}

func (r *budgetReader) Read(p []byte) (int, error) {
	left := r.b.left.Load()
	if left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.r.Read(p)
	if r.b.left.Add(-int64(n)) < 0 {
		return n, errBudget // another fetch spent the rest meanwhile: this read is the last
	}
	return n, err
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

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
