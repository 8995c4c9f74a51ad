package scanner

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/discover"
	"sitepulse/scanner/netguard"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A scan whose discovery stops at a limit audits the pages found before it and says so on the
// scan page, as a note among its failed audits: here a sitemap index whose second child is a
// gzip bomb, against a 1 MiB budget.
func TestScanAuditsWhatDiscoveryFoundAndSaysItStopped(t *testing.T) {
	var srv *httptest.Server
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	io.WriteString(z, "<urlset>"+strings.Repeat("<url><loc>http://x.test/fast</loc></url>", 1<<20)+"</urlset>")
	z.Close()
	bomb := gz.Bytes()
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sitemap.xml":
			io.WriteString(w, `<sitemapindex><sitemap><loc>`+srv.URL+`/a.xml</loc></sitemap><sitemap><loc>`+srv.URL+`/bomb.xml.gz</loc></sitemap></sitemapindex>`)
		case "/a.xml":
			io.WriteString(w, `<urlset><url><loc>`+srv.URL+`/</loc></url><url><loc>`+srv.URL+`/about</loc></url></urlset>`)
		case "/bomb.xml.gz":
			w.Write(bomb)
		}
	}))
	defer srv.Close()
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testScanAuditsWhatDiscoveryFound(t, b.Open(t), srv.URL) })
	}
}

func testScanAuditsWhatDiscoveryFound(t *testing.T, st store.Store, sitemapOrigin string) {
	r := newRig(t, st)
	site := r.addSite("Bombed", nil)
	site.Domain = sitemapOrigin
	if err := r.st.UpdateSite(t.Context(), site); err != nil {
		t.Fatal(err)
	}
	r.pool(func(c *PoolConfig) {
		c.Discovery = discover.Discovery{Client: netguard.Guard{AllowPrivate: true}.Client(), MaxBytes: 1 << 20}
	})
	sc := r.wait(r.enqueue(site).ID)
	if sc.Status != store.StatusComplete {
		t.Fatalf("scan %s (%s), want complete; logs:\n%s", sc.Status, sc.Error, r.logs.String())
	}
	results, errs := r.results(sc.ID)
	var got []string
	for _, res := range results {
		got = append(got, res.PagePath+" "+string(res.Strategy))
	}
	sort.Strings(got)
	if want := "/ desktop,/ mobile,/about desktop,/about mobile,/fast desktop,/fast mobile"; strings.Join(got, ",") != want {
		t.Errorf("results = %v, want %s", got, want)
	}
	if len(errs) != 1 || errs[0].Strategy != analysis.DiscoveryNote || !strings.Contains(errs[0].Error, "budget of 1 MiB") {
		t.Errorf("page errors = %+v, want one discovery note naming the 1 MiB budget", errs)
	}
	if sc.PagesDone != sc.PagesTotal || sc.PagesTotal != 7 {
		t.Errorf("progress %d of %d, want 7 of 7 (six audits and the note)", sc.PagesDone, sc.PagesTotal)
	}
}
