package handlers

import (
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/beacon"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

const realBeacon = `{"p":"/pricing","d":"phone","nt":"navigate","m":[{"n":"lcp","v":2400,"t":"img.hero","u":"https://shop.example/hero.jpg"},` +
	`{"n":"inp","v":320,"t":"button.plan-toggle","e":"click","i":10,"r":300,"s":10},{"n":"cls","v":0.12,"t":"div.banner"},{"n":"ttfb","v":120}]}`

// Hostile beacons (another origin, none, oversized, out of range, malformed, forged or unknown
// ids, a flood from one address) are refused or capped with the REST error shape, never a 500,
// and a real site's figures are what its real beacons made them.
func TestHostileBeacons(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testHostileBeacons(t, b.Open(t)) })
	}
}

func testHostileBeacons(t *testing.T, st store.Store) {
	ctx := context.Background()
	ts := newTestServerWith(t, st, nil)
	newSiteOf := func(email, domain string) (store.Site, string) {
		u := store.User{ID: store.NewID(), Email: email, PasswordHash: "x", CreatedAt: ts.now}
		must(t, st.CreateUser(ctx, u))
		site := store.Site{ID: store.NewID(), UserID: u.ID, Name: domain, Domain: domain, Pages: []string{"/"}, CreatedAt: ts.now}
		must(t, st.CreateSite(ctx, site))
		key, err := st.BeaconKey(ctx, u.ID, site.ID)
		must(t, err)
		return site, key
	}
	site, key := newSiteOf("a@example.com", "shop.example")
	other, otherKey := newSiteOf("b@example.com", "other.example")

	send := func(key, origin, contentType, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/api/beacon/"+key, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			var shape struct{ Error string }
			if json.Unmarshal(got, &shape) != nil || shape.Error == "" {
				t.Errorf("status %d without the error shape: %q", resp.StatusCode, got)
			}
		}
		return resp.StatusCode, string(got)
	}
	const text = "text/plain;charset=UTF-8"
	// The real site's beacons: from its origin and its www. twin.
	for _, origin := range []string{"https://shop.example", "https://www.shop.example"} {
		if status, body := send(key, origin, text, realBeacon); status != http.StatusNoContent {
			t.Fatalf("a real beacon from %s: %d %s", origin, status, body)
		}
	}
	figures := func() string {
		pts, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{})
		must(t, err)
		its, err := st.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{}, 100)
		must(t, err)
		els, err := st.BeaconElementsOf(ctx, site.ID, store.FieldQuery{}, 100)
		must(t, err)
		out, _ := json.Marshal([]any{pts, its, els})
		return string(out)
	}
	before := figures()
	if !strings.Contains(before, `"Samples":2`) || !strings.Contains(before, "button.plan-toggle") || !strings.Contains(before, "img.hero") {
		t.Fatalf("the real beacons' figures: %s", before)
	}

	big := `{"p":"/` + strings.Repeat("a", 5000) + `","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`
	hostile := []struct {
		name, key, origin, contentType, body string
		status                               int
	}{
		{"from another origin", key, "https://evil.example", text, realBeacon, 403},
		{"with no Origin", key, "", text, realBeacon, 403},
		{"from an opaque origin", key, "null", text, realBeacon, 403},
		{"over plain http", key, "http://shop.example", text, realBeacon, 403},
		{"from a look-alike host", key, "https://shop.example.evil.example", text, realBeacon, 403},
		{"from a subdomain", key, "https://blog.shop.example", text, realBeacon, 403},
		{"another site's id from this origin", otherKey, "https://shop.example", text, realBeacon, 403},
		{"a forged id", store.NewBeaconKey(), "https://shop.example", text, realBeacon, 404},
		{"the site id for its beacon id", site.ID, "https://shop.example", text, realBeacon, 404},
		{"an id with SQL in it", "b_'%20OR%201=1--", "https://shop.example", text, realBeacon, 404},
		{"as JSON (a preflight's type)", key, "https://shop.example", "application/json", realBeacon, 415},
		{"with no type", key, "https://shop.example", "", realBeacon, 415},
		{"oversized", key, "https://shop.example", text, big, 413},
		{"malformed JSON", key, "https://shop.example", text, `{"p":"/pricing",`, 400},
		{"an extra field", key, "https://shop.example", text, `{"p":"/","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}],"ip":"1.2.3.4"}`, 400},
		{"an LCP of 11 days", key, "https://shop.example", text, `{"p":"/pricing","d":"phone","nt":"navigate","m":[{"n":"lcp","v":1e9}]}`, 422},
		{"a negative INP", key, "https://shop.example", text, `{"p":"/pricing","d":"phone","nt":"navigate","m":[{"n":"inp","v":-5,"e":"click","i":0,"r":0,"s":0}]}`, 422},
		{"a CLS of 1000", key, "https://shop.example", text, `{"p":"/pricing","d":"phone","nt":"navigate","m":[{"n":"cls","v":1000}]}`, 422},
		{"a query in the path", key, "https://shop.example", text, `{"p":"/pricing?email=x@y.z","d":"phone","nt":"navigate","m":[{"n":"fcp","v":1}]}`, 422},
	}
	for _, tt := range hostile {
		ts.now = ts.now.Add(time.Minute) // a fresh address bucket: each case is judged on its own
		if status, body := send(tt.key, tt.origin, tt.contentType, tt.body); status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, status, body, tt.status)
		}
	}
	if after := figures(); after != before {
		t.Fatalf("hostile beacons moved the figures:\n%s\n%s", before, after)
	}
	if pts, _ := st.BeaconSeriesOf(ctx, other.ID, store.FieldQuery{}); len(pts) != 0 {
		t.Fatalf("the other site got figures: %+v", pts)
	}

	// A flood from one address: its bucket's burst is accepted, then 429 until it refills.
	ts.now = ts.now.Add(time.Minute)
	accepted, limited := 0, 0
	for i := 0; i < 100; i++ {
		switch status, _ := send(key, "https://shop.example", text, realBeacon); status {
		case http.StatusNoContent:
			accepted++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("flood: status %d", status)
		}
	}
	if accepted != 30 || limited != 70 {
		t.Fatalf("flood of 100 from one address: %d accepted, %d limited; want 30 and 70", accepted, limited)
	}
	pts, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.example/pricing", Metric: "inp"})
	must(t, err)
	if len(pts) != 1 || pts[0].Samples != 32 {
		t.Fatalf("after the flood: %+v, want the 2 real and 30 flooded samples", pts)
	}
}

// The script is served to any page, cacheable, gzip-compressed when asked, and revalidated
// by its ETag.
func TestBeaconScript(t *testing.T) {
	ts := newTestServerWith(t, memory.New(), nil)
	req, _ := http.NewRequest("GET", ts.URL+"/beacon/v1.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	must(t, err)
	zipped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") ||
		resp.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" || !strings.Contains(resp.Header.Get("Cache-Control"), "public") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("gzip: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(zipped)))
	must(t, err)
	plain, _ := io.ReadAll(zr)
	if sum := sha512.Sum384(plain); beacon.Script.Integrity != "sha384-"+base64.StdEncoding.EncodeToString(sum[:]) {
		t.Errorf("integrity %s is not the sha384 of the bytes served", beacon.Script.Integrity)
	}
	if string(plain) != string(beacon.Script.Plain) || len(zipped) > 6<<10 {
		t.Fatalf("gzipped body: %d bytes, unzips to the script: %v", len(zipped), string(plain) == string(beacon.Script.Plain))
	}
	req.Header.Set("Accept-Encoding", "gzip;q=0")
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp, err = http.DefaultTransport.RoundTrip(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d", resp.StatusCode)
	}
	req.Header.Del("If-None-Match")
	resp, err = http.DefaultTransport.RoundTrip(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "" || string(body) != string(beacon.Script.Plain) {
		t.Fatalf("gzip;q=0: %v", resp.Header)
	}
}

// The site's edit page (owners and editors) shows its beacon tag, with the public id the
// ingest takes, never the site id.
func TestBeaconSnippetOnEditPage(t *testing.T) {
	st := memory.New()
	f := newAccessFixture(t, st, nil)
	_, page := f.do(t, "GET", "/sites/"+f.a.siteID+"/edit", "", "", cookie(f.a.session))
	key, err := st.BeaconKey(context.Background(), f.a.userID, f.a.siteID)
	must(t, err)
	want := `&lt;script defer src=&#34;http://sitepulse.test/beacon/v1.js&#34; data-site=&#34;` + key + `&#34;&gt;&lt;/script&gt;`
	if !strings.Contains(page, "Real-user beacon") || !strings.Contains(page, want) {
		t.Fatalf("the edit page lacks the beacon tag %s", want)
	}
}
