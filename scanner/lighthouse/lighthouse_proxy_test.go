package lighthouse

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse/chrometest"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/scantest"
)

// publicSite stands in for a public site: a loopback server the guard is told to let through
// (Exempt), beside internalService, which it refuses like any loopback address.
func publicSite(t *testing.T, h http.Handler) (*httptest.Server, netguard.Guard) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, netguard.Guard{Exempt: netip.MustParseAddrPort(srv.Listener.Addr().String())}
}

// lighthouseCLI finds a Lighthouse CLI and Chromium, or skips saying what is missing (under
// CI=true it fails instead): chrometest.Find, as scanner's real-Chrome tests do.
func lighthouseCLI(t *testing.T) (cmd, chrome string) {
	t.Helper()
	return chrometest.Find(t, Home, InstallCommand)
}

// hostilePage is the first row: a page on an allowed address that redirects to, or
// loads <img>, fetch, <iframe> (and a WebSocket and a stylesheet) from, an internal service.
func hostilePage(internal string) http.Handler {
	host := strings.TrimPrefix(internal, "http://")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, internal+"/", http.StatusFound)
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Public page</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="%[1]s/style.css"></head>
<body><p>A public page.</p>
<img src="%[1]s/pixel.png" alt="pixel" width="10" height="10">
<iframe src="%[1]s/frame" title="frame"></iframe>
<script>fetch(%[1]q + "/api").catch(function(){}); try { new WebSocket("ws://%[2]s/ws"); } catch (e) {}</script>
</body></html>`, internal, host)
		default:
			http.NotFound(w, r)
		}
	})
}

// A stand-in Lighthouse that fetches what Chrome would through the proxy named in its
// --chrome-flags, with curl: the internal service gets nothing, whether asked directly, by
// CONNECT, or through the public page's redirect, and every refusal is a 403.
func TestLighthouseSendsChromeThroughTheGuardedProxy(t *testing.T) {
	internal, hits := internalService(t)
	public, guard := publicSite(t, hostilePage(internal.URL))
	dir := t.TempDir()
	out := filepath.Join(dir, "codes")
	// $7 is --chrome-flags=...; the proxy is the value of its --proxy-server.
	cli := filepath.Join(dir, "lh.sh")
	script := `#!/bin/sh
proxy=$(printf '%s\n' "$@" | grep -o -- '--proxy-server=[^ ]*' | cut -d= -f2)
for u in "$1" "$1redirect" "` + internal.URL + `/pixel.png" "` + internal.URL + `/api"; do
  curl -s -L -o /dev/null -w '%{http_code}\n' --proxy "$proxy" "$u" >> ` + out + `
done
curl -s -o /dev/null -w '%{http_connect}\n' --proxytunnel --proxy "$proxy" "http://` + strings.TrimPrefix(internal.URL, "http://") + `/tunnel" >> ` + out + `
exit 1
`
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := &scantest.LogBuffer{}
	l := New(Config{Command: cli, Guard: guard, Log: slog.New(slog.NewTextHandler(logs, nil))})
	l.Audit(context.Background(), public.URL+"/", "mobile")
	codes, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The public page, then its redirect's hop, the image, the fetch and the tunnel, refused.
	if got, want := strings.Fields(string(codes)), []string{"200", "403", "403", "403", "403"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("status codes through the proxy = %v, want %v", got, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0", n)
	}
	if !strings.Contains(logs.String(), "refused=4") {
		t.Errorf("log %q: want the run's line to count 4 refused connections", logs.String())
	}
}

// The first row with a real Chrome and Lighthouse: a public page (a loopback port the
// test lets through) redirects to, and loads an image, a fetch, an iframe, a WebSocket and a
// stylesheet from, an internal service (another loopback port). The internal service receives
// nothing, and its heading is not the LCP element. Skips, saying why, without Chromium and
// Lighthouse (docs/local-lighthouse.md).
func TestLighthouseRealChromeStaysOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	cmd, chrome := lighthouseCLI(t)
	internal, hits := internalService(t)
	public, guard := publicSite(t, hostilePage(internal.URL))
	logs := &scantest.LogBuffer{}
	l := New(Config{Command: cmd, ChromePath: chrome, Timeout: 3 * time.Minute, Guard: guard,
		ChromeFlags: "--headless=new --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync",
		Log:         slog.New(slog.NewTextHandler(logs, nil))})

	r, err := l.Audit(context.Background(), public.URL+"/", "desktop")
	if err != nil {
		t.Fatalf("audit of the public page: %v; log:\n%s", err, logs.String())
	}
	var lcp string
	if r.LCPElement != nil {
		lcp = r.LCPElement.Snippet
	}
	var perf, lcpMS any
	if r.Scores.Performance != nil {
		perf = *r.Scores.Performance
	}
	if r.CoreWebVitals.LCP != nil {
		lcpMS = *r.CoreWebVitals.LCP
	}
	t.Logf("public page: performance %v, LCP %v ms, LCP element %q", perf, lcpMS, lcp)
	if strings.Contains(lcp, "internal") {
		t.Errorf("LCP element %q came from the internal service", lcp)
	}
	_, err = l.Audit(context.Background(), public.URL+"/redirect", "desktop")
	t.Logf("redirect to the internal service: %v", err)
	if err == nil {
		t.Error("the audit of a page redirecting to an internal address succeeded; want a page error")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service received %d requests, want 0; log:\n%s", n, logs.String())
	}
	refused := regexp.MustCompile(`refused=(\d+)`).FindAllStringSubmatch(logs.String(), -1)
	t.Logf("connections refused by the proxy per run: %v", refused)
}
