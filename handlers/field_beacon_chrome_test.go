package handlers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// blockMS is how long the sample page's button blocks the main thread on click.
const blockMS = 300

// beaconSitePage is the sample site's home page with the beacon tag: a hero image (its LCP
// element), a banner inserted above the text 100 ms after load (a layout shift whose largest
// target is the text), a button whose click handler blocks the main thread for blockMS and then
// shows its result (so the next frame paints, as a real app's does), and a link that navigates
// without a load (history.pushState: a soft navigation).
//
// busyApp, put in the page's head, makes it an app whose main thread never goes idle
// (web-vitals#754): its idle callbacks never run. web-vitals reads event entries in an idle
// callback or, failing that, when the page hides, after its own report for the hide; a sender
// that sent only that report lost the INP of every visitor who left before an idle moment (CI on
// a loaded machine saw it: the page was left before Chromium found one).
const busyApp = `<script>window.requestIdleCallback = function () { return 0; };</script>`
const beaconSitePage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Sample site</title>
%s<script defer src="%s/beacon/v1.js" data-site="%s"></script>
<style>body{font:16px sans-serif;margin:0} #hero{display:block;width:800px;height:400px} #shifted{font-size:20px}</style></head>
<body><main><img id="hero" src="/hero.png" alt="The sample site's hero" width="800" height="400">
<p id="shifted">Lighthouse and real users see this sample site.</p>
<button id="slow" type="button">Compute the plan</button> <output id="plan"></output>
<a id="soft" href="/next">Next page</a></main>
<script>
setTimeout(function () { var b = document.createElement('div'); b.style.height = '120px'; b.textContent = 'Banner';
  document.body.insertBefore(b, document.body.firstChild); }, 100);
document.getElementById('slow').addEventListener('click', function () { var end = performance.now() + %d; while (performance.now() < end) {}
  document.getElementById('plan').textContent = 'Plan ready'; });
document.getElementById('soft').addEventListener('click', function (e) { e.preventDefault(); history.pushState({}, '', '/next'); });
</script></body></html>`

// heroPNG is a photo-like hero: noise, so Chrome counts it for LCP (it skips images of too
// few bits per pixel, such as a flat colour).
func heroPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 400, 200))
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rnd.IntN(256))
	}
	var b bytes.Buffer
	must(t, png.Encode(&b, img))
	return b.Bytes()
}

// The "done when" for the beacon, in real Chromium: the sample site with the beacon tag;
// a click on a button that blocks the main thread for 300 ms yields an INP sample of at least
// 300 ms attributed to that button; LCP and CLS arrive with their elements; a reload and a soft
// navigation both count as page views; on a page that goes idle and on a busy app. Under
// CI=true a missing Chromium fails the test.
func TestBeaconInRealChromium(t *testing.T) {
	chrome := cmp.Or(os.Getenv("CHROME_PATH"), "/usr/bin/chromium")
	if _, err := os.Stat(chrome); err != nil {
		msg := fmt.Sprintf("Chromium not found at %s (sudo apt-get install chromium, or set CHROME_PATH)", chrome)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip("skipped: " + msg)
	}
	t.Run("idle", func(t *testing.T) { beaconInChromium(t, chrome, "") })
	t.Run("busy app", func(t *testing.T) { beaconInChromium(t, chrome, busyApp) })
}

func beaconInChromium(t *testing.T, chrome, head string) {
	st := memory.New() // the store is not what this test proves (TestBeaconStore is)
	st.Rules = store.SiteRules{AllowPrivate: true}
	ts := newTestServerWith(t, st, func(d *Deps) { d.Now = time.Now })
	ctx := context.Background()

	var key string
	hero := heroPNG(t)
	sample := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/", "/next":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, beaconSitePage, head, ts.URL, key, blockMS)
		case "/hero.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(hero)
		default:
			http.NotFound(w, r)
		}
	}))
	defer sample.Close()
	u := store.User{ID: store.NewID(), Email: "owner@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	must(t, st.CreateUser(ctx, u))
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Sample", Domain: sample.URL, Pages: []string{"/"}, CreatedAt: time.Now()}
	must(t, st.CreateSite(ctx, site))
	var err error
	key, err = st.BeaconKey(ctx, u.ID, site.ID)
	must(t, err)

	dt, page := launchChromium(t, chrome)
	call := func(method string, params, result any) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, storetest.Timeout())
		defer cancel()
		if err := dt.Call(c, page, method, params, result); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	eval := func(expr string) json.RawMessage {
		t.Helper()
		var out struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
			ExceptionDetails any `json:"exceptionDetails"`
		}
		call("Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &out)
		if out.ExceptionDetails != nil {
			t.Fatalf("%s: %v", expr, out.ExceptionDetails)
		}
		return out.Result.Value
	}
	loaded := func() {
		t.Helper()
		storetest.WaitFor(t, "the page and the beacon script to load", func() bool {
			return string(eval(`document.readyState === 'complete' && !!document.querySelector('script[data-site]') && performance.getEntriesByType('resource').some(e => e.name.endsWith('/beacon/v1.js'))`)) == "true"
		})
		// Two frames: the banner's shift and the hero's paint are in.
		eval(`new Promise(r => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(r)), 300))`)
	}
	click := func(selector string) {
		t.Helper()
		var box []float64
		must(t, json.Unmarshal(eval(`(() => { const r = document.querySelector('`+selector+`').getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`), &box))
		for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
			call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}, nil)
		}
		eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`)
	}

	call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
	call("Page.navigate", map[string]any{"url": sample.URL + "/"}, nil)
	loaded()
	click("#slow")
	// The browser dispatches an interaction's Event Timing entry (what web-vitals' INP reads)
	// once the frame that follows it is presented. Headless Chromium presents a frame only when
	// asked (a screenshot; a display does it every frame): without it the entry waited for the
	// next input, 2 s later, and its duration said so. Then wait in the page until the browser
	// has dispatched the click's entry (to web-vitals' observer too, in the same task), not for
	// a time.
	call("Page.captureScreenshot", map[string]any{"format": "png"}, nil)
	eval(fmt.Sprintf(`new Promise(r => new PerformanceObserver((l, o) => {
		if (l.getEntries().some(e => e.interactionId > 0 && e.processingEnd - e.processingStart >= %d)) { o.disconnect(); r(); }
	}).observe({type: 'event', buffered: true, durationThreshold: 16}))`, blockMS*9/10))
	click("#soft") // a soft navigation to /next: its page view is sent at once
	call("Page.reload", map[string]any{}, nil)
	loaded()
	call("Page.navigate", map[string]any{"url": "about:blank"}, nil)

	origin := sample.URL
	views := map[string]float64{}
	storetest.WaitFor(t, "the beacons of the first load, the soft navigation and the reload", func() bool {
		clear(views)
		for _, p := range []string{origin + "/", origin + "/next"} {
			vs, err := st.BeaconViewsOf(ctx, site.ID, store.FieldQuery{Page: p})
			must(t, err)
			for _, v := range vs {
				views[v.Navigation] += v.Count
			}
		}
		return views["navigate"] >= 1 && views["reload"] >= 1 && views["soft"] >= 1
	})

	// The INP sample first (its histogram), then the interaction it was filed with.
	storetest.WaitFor(t, "the button's INP sample", func() bool {
		pts, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: origin + "/", Metric: "inp"})
		must(t, err)
		return len(pts) > 0
	})
	var inp []store.Interaction
	storetest.WaitFor(t, "the button's INP", func() bool {
		inp, err = st.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{}, 10)
		must(t, err)
		return len(inp) > 0
	})
	it := inp[0]
	// The p75 of one sample is its bin's middle: within 5% of the value, so its bin's start is
	// at or above blockMS when the sample is.
	if !strings.Contains(it.Selector, "slow") || it.EventType == "" || it.Device != store.FieldDesktop || it.P75 < blockMS*0.95 || it.ProcessingDuration < blockMS*0.95 ||
		it.Page != origin+"/" {
		t.Fatalf("the slowest interaction: %+v, want the #slow button's click at >= %d ms on %s/", it, blockMS, origin)
	}
	pts, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: origin + "/", Metric: "inp"})
	must(t, err)
	if len(pts) != 1 || pts[0].P75 == nil || len(pts[0].Histogram) == 0 {
		t.Fatalf("INP points: %+v", pts)
	}
	if start := pts[0].Histogram[len(pts[0].Histogram)-1]; start.End <= blockMS {
		t.Fatalf("the INP sample's bin %+v ends below %d ms", start, blockMS)
	}
	els, err := st.BeaconElementsOf(ctx, site.ID, store.FieldQuery{Page: origin + "/"}, 10)
	must(t, err)
	var lcp, cls *store.BeaconElement
	for i := range els {
		switch els[i].Metric {
		case "lcp":
			lcp = &els[i]
		case "cls":
			cls = &els[i]
		}
	}
	if lcp == nil || !strings.Contains(lcp.Selector, "hero") || lcp.Resource != origin+"/hero.png" {
		t.Fatalf("LCP element: %+v (all: %+v)", lcp, els)
	}
	if cls == nil || cls.Selector == "" || cls.P75 <= 0 {
		t.Fatalf("CLS target: %+v (all: %+v)", cls, els)
	}
	all, err := st.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: origin + "/"})
	must(t, err)
	seen := map[string]int64{}
	for _, p := range all {
		seen[p.Metric] += p.Samples
	}
	for _, m := range store.FieldMetrics {
		if seen[m] == 0 {
			t.Errorf("no %s sample from real Chromium: %v", m, seen)
		}
	}
	t.Logf("real Chromium: INP %s %s p75 %.0f ms (input %.0f, processing %.0f, presentation %.0f); LCP %s %s; CLS %s %.3f; views %v; samples %v",
		it.EventType, it.Selector, it.P75, it.InputDelay, it.ProcessingDuration, it.PresentationDelay, lcp.Selector, lcp.Resource, cls.Selector, cls.P75, views, seen)
}

// launchChromium starts headless Chromium with a profile of its own and answers its DevTools
// connection and the session of a new page attached to it; both end with the test.
func launchChromium(t *testing.T, chrome string) (dt *lighthouse.DevTools, session string) {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write there as it exits, and the
	// profile is removed on a best-effort basis.
	dir, err := os.MkdirTemp("", "sitepulse-beacon-chrome-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command(chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--remote-debugging-port=0", "--user-data-dir="+dir, "about:blank")
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var wsURL string
	storetest.WaitFor(t, "Chromium's DevTools port", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if err != nil || len(lines) != 2 {
			return false
		}
		port, err := strconv.Atoi(lines[0])
		wsURL = "ws://127.0.0.1:" + strconv.Itoa(port) + lines[1]
		return err == nil && port > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), storetest.Timeout())
	defer cancel()
	dt, err = lighthouse.DialDevTools(ctx, wsURL, nil)
	must(t, err)
	t.Cleanup(func() { dt.Close() })
	var target struct {
		TargetID string `json:"targetId"`
	}
	must(t, dt.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target))
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	must(t, dt.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached))
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		must(t, dt.Call(ctx, attached.SessionID, m, nil, nil))
	}
	return dt, attached.SessionID
}
