package lighthouse

import (
	"context"
	"encoding/json"

	"log/slog"

	"net/netip"
	"os"

	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

func TestLighthouseArgs(t *testing.T) {
	l := New(Config{Command: "node  /opt/lh/cli/index.js", ChromeFlags: "--headless=new --no-sandbox"})
	if !reflect.DeepEqual(l.argv, []string{"node", "/opt/lh/cli/index.js"}) {
		t.Errorf("argv = %q", l.argv)
	}
	// Every request of Chrome goes to the run's proxy, loopback included; QUIC and DoH are off.
	flags := "--headless=new --no-sandbox --proxy-server=http://127.0.0.1:5555 --proxy-bypass-list=<-loopback> --disable-quic"
	tests := []struct {
		strategy store.Strategy
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
			logs := &scantest.LogBuffer{}
			l := New(Config{Command: tt.command, Timeout: tt.timeout, Guard: netguard.Guard{AllowPrivate: true},
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
