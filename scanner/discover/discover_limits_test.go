package discover

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// countingTransport counts the body bytes the discovery reads, after the transport's own
// Content-Encoding decoding: what the XML parser was fed, or would have been.
type countingTransport struct {
	base http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{resp.Body, &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// urlset is a sitemap of n pages /<prefix>0.../<prefix>n-1 on origin, padded to about size bytes.
func urlset(origin, prefix string, n, size int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range n {
		fmt.Fprintf(&b, "<url><loc>%s/%s%d</loc></url>", origin, prefix, i)
	}
	if pad := size - b.Len() - 20; pad > 0 {
		b.WriteString("<!--" + strings.Repeat("x", pad) + "-->")
	}
	b.WriteString("</urlset>")
	return b.String()
}

func sitemapIndex(origin string, children ...string) string {
	var b strings.Builder
	b.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, c := range children {
		fmt.Fprintf(&b, "<sitemap><loc>%s%s</loc></sitemap>", origin, c)
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	io.WriteString(z, s)
	z.Close()
	return b.Bytes()
}

// The third row: a sitemap index of 50 children of 10 MiB had one scan download and
// parse 500 MiB. Here 50 children of 1 MiB against a 4 MiB budget: discovery reads at most the
// budget (plus one read's worth), audits what it found and says it stopped at the budget.
func TestDiscoveryStopsAtItsByteBudget(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			var kids []string
			for i := range 50 {
				kids = append(kids, fmt.Sprintf("/c%d.xml", i))
			}
			io.WriteString(w, sitemapIndex(srv.URL, kids...))
			return
		}
		io.WriteString(w, urlset(srv.URL, strings.TrimSuffix(r.URL.Path[1:], ".xml")+"-", 1, 1<<20))
	}))
	defer srv.Close()
	ct := &countingTransport{base: netguard.Guard{AllowPrivate: true}.Client().Transport}
	d := Discovery{Client: &http.Client{Transport: ct}, MaxPages: 50, MaxBytes: 4 << 20}
	pages, source, note := d.Pages(context.Background(), store.Site{Domain: srv.URL})
	if got, max := ct.read.Load(), int64(4<<20+64<<10); got > max {
		t.Errorf("discovery read %d bytes of XML, want at most the 4 MiB budget (%d with slack)", got, max)
	}
	var le *LimitError
	if !errors.As(note, &le) || !strings.Contains(note.Error(), "4 MiB") {
		t.Errorf("note = %v, want a *LimitError naming the 4 MiB budget", note)
	}
	if source != "sitemap" || len(pages) == 0 || len(pages) >= 50 {
		t.Errorf("pages = %v from %s, want the few found before the budget, from the sitemap", pages, source)
	}
}

// The fourth row: a gzip bomb (200 MiB of XML in 200 KiB) kept a scan busy for over a
// minute. Gzip is decoded whether it comes as Content-Encoding or as a .xml.gz body, and the
// decoded bytes count against the budget, so a bomb stops there; pages before it are audited.
func TestDiscoveryStopsAGzipBombAtTheBudget(t *testing.T) {
	var srv *httptest.Server
	var bombAt string       // the index's second child
	bomb := func() []byte { // 64 MiB of one repeated page, about 100 KiB compressed
		var b strings.Builder
		b.WriteString(`<urlset>`)
		entry := "<url><loc>http://x.test/bomb</loc></url>"
		b.WriteString(strings.Repeat(entry, 64<<20/len(entry)))
		b.WriteString(`</urlset>`)
		return gzipped(t, b.String())
	}()
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sitemap.xml":
			io.WriteString(w, sitemapIndex(srv.URL, "/first.xml", bombAt))
		case "/first.xml":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipped(t, urlset(srv.URL, "first", 2, 0)))
		case "/bomb.xml.gz":
			w.Header().Set("Content-Type", "application/gzip")
			w.Write(bomb)
		case "/encoded.xml":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		}
	}))
	defer srv.Close()
	for _, child := range []string{"/bomb.xml.gz", "/encoded.xml"} {
		t.Run("a bomb at "+child, func(t *testing.T) {
			bombAt = child
			ct := &countingTransport{base: netguard.Guard{AllowPrivate: true}.Client().Transport}
			d := Discovery{Client: &http.Client{Transport: ct}, MaxBytes: 1 << 20}
			site := store.Site{Domain: srv.URL}
			pages, _, note := d.Pages(context.Background(), site)
			if got := ct.read.Load(); got > 1<<20+64<<10 {
				t.Errorf("read %d bytes, want at most the 1 MiB budget", got)
			}
			var le *LimitError
			if !errors.As(note, &le) {
				t.Errorf("note = %v, want a *LimitError", note)
			}
			if want := []string{"/first0", "/first1", "/bomb"}; !reflect.DeepEqual(pages, want) {
				t.Errorf("pages = %v, want %v", pages, want)
			}
		})
	}
}

// The second row: slow children held a scan worker for up to 50 x 14 s. Discovery has
// a deadline of its own, on an injected clock here: when it fires, the children still loading
// are abandoned and the pages found so far are audited, with a note naming the deadline.
func TestDiscoveryStopsAtItsDeadline(t *testing.T) {
	arrived := make(chan string, 10)
	hang := make(chan struct{})
	defer close(hang)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sitemap.xml":
			io.WriteString(w, sitemapIndex(srv.URL, "/fast.xml", "/slow.xml"))
		case "/fast.xml":
			io.WriteString(w, urlset(srv.URL, "fast", 2, 0))
		case "/slow.xml":
			arrived <- r.URL.Path
			w.(http.Flusher).Flush()
			select { // a child that never finishes, as far as discovery can tell
			case <-hang:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	fire := make(chan time.Time)
	var asked time.Duration
	// One child at a time, so the fast one is read by the time the slow one arrives.
	d := Discovery{Client: netguard.Guard{AllowPrivate: true}.Client(), Deadline: 30 * time.Second, Fetches: 1,
		After: func(d time.Duration) <-chan time.Time { asked = d; return fire }}
	go func() {
		<-arrived // the slow child is loading: now the deadline passes
		fire <- time.Time{}
	}()
	pages, source, note := d.Pages(context.Background(), store.Site{Domain: srv.URL})
	if asked != 30*time.Second {
		t.Errorf("deadline asked of the clock = %s, want 30s", asked)
	}
	var le *LimitError
	if !errors.As(note, &le) || !strings.Contains(note.Error(), "30s") {
		t.Errorf("note = %v, want a *LimitError naming the 30s deadline", note)
	}
	if want := []string{"/fast0", "/fast1"}; !reflect.DeepEqual(pages, want) || source != "sitemap" {
		t.Errorf("pages = %v from %s, want %v from the sitemap", pages, source, want)
	}
}

// Children are read a few at a time per scan (Fetches), not one after another, and not all at
// once: with ten children that each wait for the test, exactly Fetches are in flight together.
func TestDiscoveryReadsChildrenAFewAtATime(t *testing.T) {
	const fetches = 4
	var mu sync.Mutex
	inFlight, most := 0, 0
	arrived := make(chan struct{}, 20)
	release := make(chan struct{})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sitemap.xml" {
			var kids []string
			for i := range 10 {
				kids = append(kids, fmt.Sprintf("/c%d.xml", i))
			}
			io.WriteString(w, sitemapIndex(srv.URL, kids...))
			return
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		io.WriteString(w, urlset(srv.URL, strings.TrimSuffix(r.URL.Path[1:], ".xml")+"-", 1, 0))
	}))
	defer srv.Close()
	go func() {
		for range fetches {
			select {
			case <-arrived:
			case <-time.After(storetest.Timeout()): // a guard against a hang, not a measurement
			}
		}
		close(release)
	}()
	d := Discovery{Client: netguard.Guard{AllowPrivate: true}.Client(), Fetches: fetches}
	pages, _, note := d.Pages(context.Background(), store.Site{Domain: srv.URL})
	if note != nil || len(pages) != 10 {
		t.Fatalf("pages = %v, note %v; want the ten children's pages", pages, note)
	}
	if want := []string{"/c0-0", "/c1-0", "/c2-0"}; !reflect.DeepEqual(pages[:3], want) {
		t.Errorf("pages begin %v, want the index's order %v", pages[:3], want)
	}
	if most != fetches {
		t.Errorf("children in flight at once = %d, want %d", most, fetches)
	}
}

// The budget counts bytes after gzip is decoded: a reader over a bomb yields the budget and
// then an error, however large the bomb would grow.
func TestSitemapReaderDecodesGzipUpToTheBudget(t *testing.T) {
	bomb := gzipped(t, strings.Repeat("<url><loc>http://x.test/</loc></url>", 4<<20))
	b := newByteBudget(1 << 20)
	n, err := io.Copy(io.Discard, b.reader(bytes.NewReader(bomb)))
	if n > 1<<20 || !errors.Is(err, errBudget) {
		t.Errorf("read %d bytes, err %v; want at most 1 MiB, then errBudget", n, err)
	}
	n, err = io.Copy(io.Discard, b.reader(strings.NewReader("<urlset/>")))
	if n != 0 || !errors.Is(err, errBudget) {
		t.Errorf("after the budget is spent: read %d bytes, err %v; want none and errBudget", n, err)
	}
}
