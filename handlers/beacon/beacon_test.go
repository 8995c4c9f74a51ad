package beacon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// The embedded web-vitals is the release docs/field.md names: a change to it is deliberate.
func TestWebVitalsPinned(t *testing.T) {
	sum := sha256.Sum256(webVitals)
	if got := hex.EncodeToString(sum[:]); got != WebVitalsSHA256 {
		t.Fatalf("web-vitals sha256 %s, want %s (update WebVitalsVersion, WebVitalsSHA256 and docs/field.md together)", got, WebVitalsSHA256)
	}
	if !strings.Contains(string(Script.Plain), "onINP") || !strings.HasPrefix(string(Script.Plain), "/*! SitePulse beacon; web-vitals 5.3.0") {
		t.Fatal("the script does not carry web-vitals")
	}
	if len(Script.Gzip) > 6<<10 {
		t.Fatalf("the script is %d bytes gzipped, above the 6 KB target", len(Script.Gzip))
	}
	t.Logf("beacon script: %d bytes, %d gzipped", len(Script.Plain), len(Script.Gzip))
}

const good = `{"p":"/pricing","d":"phone","nt":"navigate","m":[{"n":"lcp","v":2400,"t":"img.hero","u":"https://shop.example/hero.jpg"},` +
	`{"n":"inp","v":320,"t":"button.plan-toggle","e":"click","i":10,"r":300,"s":10},{"n":"cls","v":0.12,"t":"div.banner"},{"n":"fcp","v":900},{"n":"ttfb","v":120}]}`

func TestParse(t *testing.T) {
	b, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != "/pricing" || b.Device != store.FieldPhone || b.Navigation != "navigate" || len(b.Figures) != 5 {
		t.Fatalf("%+v", b)
	}
	if f := b.Figures[1]; f.Metric != "inp" || f.Value != 320 || f.Target != "button.plan-toggle" || f.EventType != "click" || f.ProcessingDuration != 300 {
		t.Fatalf("inp %+v", f)
	}
	if f := b.Figures[0]; f.Resource != "https://shop.example/hero.jpg" || f.Target != "img.hero" {
		t.Fatalf("lcp %+v", f)
	}
	if _, err := Parse([]byte(`{"p":"/a","d":"desktop","nt":"soft","m":[{"n":"nav"}]}`)); err != nil {
		t.Fatalf("a soft navigation: %v", err)
	}
	bad := []struct {
		name, body string
		malformed  bool
	}{
		{"empty", ``, true},
		{"not JSON", `lcp=2400`, true},
		{"an array", `[]`, true},
		{"an unknown field", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}],"ua":"Mozilla"}`, true},
		{"an unknown figure field", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1,"ip":"1.2.3.4"}]}`, true},
		{"two objects", good + good, true},
		{"a string for a number", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":"1"}]}`, true},
		{"no figures", `{"p":"/","d":"phone","nt":"navigate","m":[]}`, false},
		{"no path", `{"d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a query in the path", `{"p":"/?email=a@b.c","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a fragment in the path", `{"p":"/#x","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a full URL for a path", `{"p":"https://evil.example/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a protocol-relative path", `{"p":"//evil.example/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a control character in the path", `{"p":"/\u0000","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a path of 301 bytes", `{"p":"/` + strings.Repeat("a", 300) + `","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"a tablet", `{"p":"/","d":"tablet","nt":"navigate","m":[{"n":"fcp","v":1}]}`, false},
		{"an unknown navigation", `{"p":"/","d":"phone","nt":"teleport","m":[{"n":"fcp","v":1}]}`, false},
		{"an unknown metric", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"tbt","v":1}]}`, false},
		{"a negative LCP", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"lcp","v":-1}]}`, false},
		{"an LCP of 11 days", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"lcp","v":1e9}]}`, false},
		{"a CLS of 1000", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"cls","v":1000}]}`, false},
		{"an INP above a minute", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"inp","v":60001,"e":"click","i":0,"r":0,"s":0}]}`, false},
		{"INP phases above its value", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"inp","v":100,"e":"click","i":50,"r":50,"s":50}]}`, false},
		{"INP without its phases", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"inp","v":100,"e":"click"}]}`, false},
		{"an unknown event type", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"inp","v":100,"e":"scroll","i":0,"r":0,"s":0}]}`, false},
		{"phases on LCP", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"lcp","v":100,"i":1}]}`, false},
		{"a resource with a query", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"lcp","v":100,"u":"https://cdn.example/a.jpg?token=secret"}]}`, false},
		{"a javascript: resource", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"lcp","v":100,"u":"javascript:alert(1)"}]}`, false},
		{"a selector with a NUL", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"cls","v":0.1,"t":"div\u0000"}]}`, false},
		{"a selector of 801 bytes", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"cls","v":0.1,"t":"` + strings.Repeat("d", 801) + `"}]}`, false},
		{"a nav figure on a hard load", `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"nav"}]}`, false},
		{"a nav figure with a value", `{"p":"/","d":"phone","nt":"soft","m":[{"n":"nav","v":5}]}`, false},
		{"11 figures", `{"p":"/","d":"phone","nt":"navigate","m":[` + strings.Repeat(`{"n":"fcp","v":1},`, 10) + `{"n":"fcp","v":1}]}`, false},
	}
	for _, tt := range bad {
		_, err := Parse([]byte(tt.body))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: accepted (%v)", tt.name, err)
			continue
		}
		if pe.Malformed != tt.malformed {
			t.Errorf("%s: malformed %v, want %v (%s)", tt.name, pe.Malformed, tt.malformed, pe.Reason)
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	for _, tt := range []struct {
		domain, origin string
		ok             bool
	}{
		{"shop.example", "https://shop.example", true},
		{"shop.example", "https://SHOP.example:443", true},
		{"shop.example", "https://www.shop.example", true},
		{"www.shop.example", "https://shop.example", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"shop.example", "http://shop.example", false},
		{"shop.example", "https://shop.example:8443", false},
		{"shop.example", "https://evil.example", false},
		{"shop.example", "https://shop.example.evil.example", false},
		{"shop.example", "https://blog.shop.example", false},
		{"shop.example", "https://www.www.shop.example", false},
		{"www.shop.example", "https://www.www.shop.example", false},
		{"shop.example", "null", false},
		{"shop.example", "", false},
		{"shop.example", "https://shop.example/path", false},
		{"shop.example", "https://user@shop.example", false},
	} {
		if got := OriginAllowed(tt.domain, tt.origin); got != tt.ok {
			t.Errorf("site %s, Origin %q: %v, want %v", tt.domain, tt.origin, got, tt.ok)
		}
	}
}

// Past the daily cap the sampling doubles at each doubling of the traffic, each kept beacon
// counting for those it stands for: the scaled count estimates the traffic, the kept ones grow
// with its log, and the p75 is unchanged.
func TestSampling(t *testing.T) {
	for _, tt := range []struct {
		n      int64
		weight float64
		keep   bool
	}{{0, 1, true}, {99, 1, true}, {100, 2, true}, {199, 2, true}, {200, 4, true}, {399, 4, true}, {400, 8, true}} {
		rnd := rand.New(rand.NewPCG(1, 2))
		kept := 0
		for i := 0; i < 8000; i++ {
			w, keep := sample(tt.n, 100, rnd)
			if w != tt.weight {
				t.Fatalf("beacon %d under a cap of 100: weight %v, want %v", tt.n, w, tt.weight)
			}
			if keep {
				kept++
			}
		}
		if want := 8000 / tt.weight; float64(kept) < want*0.9 || float64(kept) > want*1.1 {
			t.Errorf("beacon %d under a cap of 100: kept %d of 8000, want about %v", tt.n, kept, want)
		}
	}
	st, site, key := newSite(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	in := New(st, Options{Now: func() time.Time { return now }, DailyCap: 100, SiteRate: 1e9, SiteBurst: 1e9, Seed: 7})
	ctx := context.Background()
	const total = 1600
	for i := 0; i < total; i++ {
		v := map[int]float64{0: 100, 9: 1000}[i%10] // 10% 100 ms, 80% 300 ms, 10% 1000 ms: p75 300
		if v == 0 {
			v = 300
		}
		b := Beacon{Path: "/", Device: store.FieldPhone, Navigation: "navigate", Figures: []Figure{{Metric: "ttfb", Value: v}}}
		if err := in.Accept(ctx, key, "https://shop.example", b); err != nil {
			t.Fatal(err)
		}
	}
	pts, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.example/", Metric: "ttfb"})
	if err != nil || len(pts) != 1 {
		t.Fatalf("%v %+v", err, pts)
	}
	var scaled float64
	for _, b := range pts[0].Histogram {
		scaled += b.Count
	}
	// 100 kept whole, then 50 per doubling: 100..200, 200..400, 400..800, 800..1600.
	if pts[0].Samples < 250 || pts[0].Samples > 350 || scaled < total*0.8 || scaled > total*1.2 {
		t.Fatalf("kept %d (want about 300), scaled count %v (want about %d)", pts[0].Samples, scaled, total)
	}
	if got := *pts[0].P75; store.BeaconBin("ttfb", got) != store.BeaconBin("ttfb", 300) {
		t.Fatalf("p75 %v under sampling, want 300's bin", got)
	}
	if s := in.Stats(); s.Accepted != pts[0].Samples || s.Sampled != total-pts[0].Samples {
		t.Fatalf("stats %+v", s)
	}
	// The next UTC day starts unsampled.
	now = now.Add(24 * time.Hour)
	in.Accept(ctx, key, "https://shop.example", Beacon{Path: "/", Device: store.FieldPhone, Navigation: "navigate", Figures: []Figure{{Metric: "ttfb", Value: 100}}})
	pts, _ = st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.example/", Metric: "ttfb", From: store.BeaconDay(now)})
	if len(pts) != 1 || pts[0].Samples != 1 || pts[0].Histogram[0].Count != 1 {
		t.Fatalf("the next day: %+v", pts)
	}
}

func newSite(t *testing.T) (*memory.Store, store.Site, string) {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	u := store.User{ID: store.NewID(), Email: "a@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Shop", Domain: "shop.example", Pages: []string{"/"}, CreatedAt: time.Now()}
	if err := st.CreateSite(ctx, site); err != nil {
		t.Fatal(err)
	}
	key, err := st.BeaconKey(ctx, u.ID, site.ID)
	if err != nil {
		t.Fatal(err)
	}
	return st, site, key
}

// failing is a store that is away.
type failing struct{ Store }

var errAway = errors.New("connection refused")

func (failing) BeaconSiteByKey(context.Context, string) (store.BeaconSite, error) {
	return store.BeaconSite{}, errAway
}
func (failing) AddBeacons(context.Context, store.BeaconBatch) ([]store.BeaconSeen, error) {
	return nil, errAway
}

// While the store is away an unknown id answers ErrUnavailable (503), never a 500, and
// batched beacons of a known site wait in memory, bounded, for the next flush.
func TestStoreAway(t *testing.T) {
	st, site, key := newSite(t)
	in := New(failing{st}, Options{FlushEvery: time.Second, MaxPending: 50})
	ctx := context.Background()
	b := Beacon{Path: "/", Device: store.FieldPhone, Navigation: "navigate", Figures: []Figure{{Metric: "fcp", Value: 500}}}
	if err := in.Accept(ctx, key, "https://shop.example", b); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unknown site while away: %v", err)
	}
	// Known site (cached), store away at flush: kept for the next.
	in.st = st
	if err := in.Accept(ctx, key, "https://shop.example", b); err != nil {
		t.Fatal(err)
	}
	in.st = failing{st}
	if err := in.Flush(ctx); err == nil {
		t.Fatal("flush to an away store succeeded")
	}
	for i := 0; i < 100; i++ { // distinct paths fill the pending bound
		b.Path = fmt.Sprintf("/p%d", i)
		if err := in.Accept(ctx, key, "https://shop.example", b); err != nil {
			t.Fatal(err)
		}
	}
	if in.Stats().Dropped == 0 {
		t.Fatal("nothing dropped past MaxPending")
	}
	in.st = st
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pts, _ := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.example/"})
	if len(pts) != 1 || pts[0].Samples != 1 {
		t.Fatalf("the beacon held through the outage: %+v", pts)
	}
}
