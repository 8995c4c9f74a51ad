package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

func TestLighthouseArgs(t *testing.T) {
	l := NewLighthouse(LighthouseConfig{Command: "node  /opt/lh/cli/index.js", ChromeFlags: "--headless=new --no-sandbox"})
	if !reflect.DeepEqual(l.argv, []string{"node", "/opt/lh/cli/index.js"}) {
		t.Errorf("argv = %q", l.argv)
	}
	// Every request of Chrome goes to the run's proxy, loopback included; QUIC and DoH are off.
	flags := "--headless=new --no-sandbox --proxy-server=http://127.0.0.1:5555 --proxy-bypass-list=<-loopback> --disable-quic --disable-features=DnsOverHttps"
	tests := []struct {
		strategy string
		want     []string
	}{
		{"mobile", []string{"https://x.test/", "--output=json", "--output-path=stdout",
			"--only-categories=performance,accessibility,best-practices,seo", "--chrome-flags=" + flags, "--quiet"}},
		{"desktop", []string{"https://x.test/", "--output=json", "--output-path=stdout",
			"--only-categories=performance,accessibility,best-practices,seo", "--chrome-flags=" + flags, "--quiet", "--preset=desktop"}},
	}
	for _, tt := range tests {
		if got := l.Args("https://x.test/", tt.strategy, netip.Addr{}, "", "http://127.0.0.1:5555"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s args = %q, want %q", tt.strategy, got, tt.want)
		}
	}
}

// A stand-in CLI shows the contract: the report on stdout is extracted; a failing or missing
// command is a clear per-page error.
func TestLighthouseCommandOutcomes(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	// The CLI's own output is the LHR; the fixtures wrap it in a PSI envelope.
	var env struct {
		LighthouseResult json.RawMessage `json:"lighthouseResult"`
	}
	if err := json.Unmarshal(fixture(t, "fast.desktop.json"), &env); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, env.LighthouseResult, 0o600); err != nil {
		t.Fatal(err)
	}
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		wantErr string
	}{
		{"the report on stdout is extracted", script("ok.sh", "cat "+report), 0, ""},
		{"a non-zero exit carries stderr", script("fail.sh", "echo 'Runtime error encountered: CHROME_INTERSTITIAL_ERROR' >&2; exit 1"), 0,
			"Lighthouse failed (exit status 1): Runtime error encountered: CHROME_INTERSTITIAL_ERROR"},
		{"garbage on stdout is a clear error", script("junk.sh", "echo '{not json'"), 0, "report is not JSON"},
		{"a hang past the timeout is stopped", script("hang.sh", "exec sleep 30"), 200 * time.Millisecond, "Lighthouse did not finish within 200ms"},
		{"a missing command says how to install it, as the README does", filepath.Join(dir, "no-such-lighthouse"), 0, "not found: install Lighthouse 13 with Node 22 (npm install --prefix ~/.sitepulse/lighthouse lighthouse@13 node@22)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuf{}
			l := NewLighthouse(LighthouseConfig{Command: tt.command, Timeout: tt.timeout, Guard: Guard{AllowPrivate: true},
				Log: slog.New(slog.NewTextHandler(logs, nil))})
			r, err := l.Audit(context.Background(), "http://127.0.0.1:8701/fast", "desktop")
			if !strings.Contains(logs.String(), `msg="lighthouse run" url=http://127.0.0.1:8701/fast strategy=desktop waited=`) || !strings.Contains(logs.String(), " ran=") {
				t.Errorf("log %q: want the time before the run (the address check) and the run's own", logs.String())
			}
			if tt.wantErr == "" {
				if err != nil || r.Scores.Performance == nil || *r.Scores.Performance != 100 {
					t.Fatalf("Audit = %v, %v", r.Scores.Performance, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// lighthouseInstall finds a Lighthouse CLI and Chromium, or skips: LIGHTHOUSE_CMD and
// CHROME_PATH when set, else where README "Local Lighthouse" installs them (~/LighthouseHome).
func lighthouseInstall(t *testing.T) (cmd, chrome string) {
	t.Helper()
	cmd = os.Getenv("LIGHTHOUSE_CMD")
	if home, err := os.UserHomeDir(); cmd == "" && err == nil {
		dir := filepath.Join(home, LighthouseHome, "node_modules")
		node, cli := filepath.Join(dir, ".bin", "node"), filepath.Join(dir, "lighthouse", "cli", "index.js")
		if _, err := os.Stat(cli); err == nil {
			cmd = node + " " + cli
		}
	}
	chrome = os.Getenv("CHROME_PATH")
	if chrome == "" {
		chrome = "/usr/bin/chromium"
	}
	if cmd == "" {
		t.Skip("Lighthouse is not installed: " + InstallLighthouse + " (README, Local Lighthouse)")
	}
	if _, err := exec.LookPath(strings.Fields(cmd)[0]); err != nil {
		t.Skipf("Lighthouse command %q not runnable: %v", cmd, err)
	}
	if _, err := os.Stat(chrome); err != nil {
		t.Skipf("Chromium not found at %s", chrome)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to serve the sample site")
	}
	return cmd, chrome
}

// serveSample serves a docroot of testdata/site with its serve.py on a free port.
func serveSample(t *testing.T, docroot string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := exec.Command("python3", "../testdata/site/serve.py", filepath.Join("../testdata/site", docroot), fmt.Sprint(port))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/robots.txt", port)); err == nil {
			resp.Body.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve.py %s did not start", docroot)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A real Lighthouse, through the pool, over the sample site served locally: the scan completes
// with real results. By default it audits /fast and / (four runs, about a minute);
// LIGHTHOUSE_ALL_PAGES=1 discovers all five pages from the site's sitemap.xml.
func TestLighthouseRealScan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	cmd, chrome := lighthouseInstall(t)
	mainPort := serveSample(t, "main")
	third := serveSample(t, "thirdparty")
	rules := fmt.Sprintf("MAP cdn.widgetly.test:80 127.0.0.1:%d,MAP static.hotjar.com:80 127.0.0.1:%d,MAP * ~NOTFOUND,EXCLUDE 127.0.0.1,EXCLUDE localhost", third, third)
	flags := `--headless=new --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync --host-resolver-rules="` + rules + `"`

	st := store.NewMemory()
	r := &rig{t: t, st: st, logs: &syncBuf{}, psi: scantest.NewPSI(t, "../testdata/psi")} // the PSI is unused
	r.user = store.User{ID: store.NewID(), Email: "lh@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), r.user); err != nil {
		t.Fatal(err)
	}
	pages := []string{"/fast", "/"}
	if os.Getenv("LIGHTHOUSE_ALL_PAGES") == "1" {
		pages = nil // from the sitemap
	}
	site := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: "Sample site", Domain: fmt.Sprintf("http://127.0.0.1:%d", mainPort), Pages: pages, CreatedAt: time.Now()}
	if err := st.CreateSite(context.Background(), site); err != nil {
		t.Fatal(err)
	}
	// Chrome sends every request to the run's proxy, so the proxy maps the third parties.
	thirdParty := map[string]string{"cdn.widgetly.test:80": fmt.Sprintf("127.0.0.1:%d", third), "static.hotjar.com:80": fmt.Sprintf("127.0.0.1:%d", third)}
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		if to, ok := thirdParty[address]; ok {
			address = to
		}
		return Guard{AllowPrivate: true}.DialContext(ctx, network, address)
	}
	lh := NewLighthouse(LighthouseConfig{Command: cmd, ChromePath: chrome, ChromeFlags: flags, Timeout: 4 * time.Minute, Guard: Guard{AllowPrivate: true}, Dial: dial})
	r.pool(func(c *PoolConfig) {
		c.Auditor, c.Workers, c.Capacity, c.Lease = lh, 1, NewCapacity(CapacityConfig{MaxInFlight: 1}), time.Minute
		c.Log = slog.New(slog.NewTextHandler(r.logs, nil))
	})
	deadline := time.Now().Add(15 * time.Minute)
	sc := r.enqueue(site)
	var got store.Scan
	for {
		got, _ = st.Scan(context.Background(), r.user.ID, sc.ID)
		if got.Status == store.StatusComplete || got.Status == store.StatusFailed || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	results, errs := r.results(sc.ID)
	for _, res := range results {
		t.Logf("%-8s %-7s perf %v a11y %v bp %v seo %v  LCP %v ms  CLS %v  TBT %v ms  third parties %d  LH %s", res.PagePath, res.Strategy,
			intOrNil(res.Scores.Performance), intOrNil(res.Scores.Accessibility), intOrNil(res.Scores.BestPractices), intOrNil(res.Scores.SEO),
			floatOrNil(res.CoreWebVitals.LCP), floatOrNil(res.CoreWebVitals.CLS), floatOrNil(res.CoreWebVitals.TBT), len(res.ThirdPartyScripts), res.LighthouseVersion)
	}
	for _, e := range errs {
		t.Logf("%s %s error: %s", e.PagePath, e.Strategy, e.Error)
	}
	t.Logf("scan %s: %d/%d, scores %s", got.Status, got.PagesDone, got.PagesTotal, fmtScores(got.Scores))
	if got.Status != store.StatusComplete || len(errs) != 0 || len(results) != got.PagesTotal {
		t.Fatalf("scan %s (%s) with %d results and %d errors; logs:\n%s", got.Status, got.Error, len(results), len(errs), r.logs.String())
	}
	for _, res := range results {
		if res.Crux.HasCruxData || res.CoreWebVitals.INP != nil {
			t.Errorf("%s %s: a lab run has no field data", res.PagePath, res.Strategy)
		}
		if res.Scores.Performance == nil || res.CoreWebVitals.LCP == nil {
			t.Errorf("%s %s: no performance score or LCP", res.PagePath, res.Strategy)
		}
	}
}

func fmtScores(s store.ScanScores) string {
	return fmt.Sprintf("health %v perf %v a11y %v bp %v seo %v", intOrNil(s.Health), intOrNil(s.Performance),
		intOrNil(s.Accessibility), intOrNil(s.BestPractices), intOrNil(s.SEO))
}
