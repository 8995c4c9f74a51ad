// Package lighthouse runs a local Lighthouse CLI as an auditor and extracts page results from
// Lighthouse reports, whether from the CLI or inside a PSI response (extract.go).
package lighthouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"sitepulse/store"

	"sitepulse/scanner/netguard"
)

// Config configures the local Lighthouse backend (AUDIT_BACKEND=lighthouse), for
// sites PSI cannot reach (staging, intranet). Zero values get the defaults noted.
type Config struct {
	// Command is LIGHTHOUSE_CMD, split on spaces into a program and its first arguments, e.g.
	// "lighthouse" or "/opt/node22/bin/node /opt/lh/node_modules/lighthouse/cli/index.js".
	// Default "lighthouse".
	Command string
	// ChromePath is CHROME_PATH, passed to Lighthouse in its environment; empty lets it search.
	ChromePath string
	// ChromeFlags is passed as --chrome-flags. Default "--headless=new --disable-gpu --no-first-run";
	// add --no-sandbox when running as root in a container.
	ChromeFlags string
	// Timeout bounds one run. Default 3 min.
	Timeout time.Duration
	// Guard checks the address of every page before Chrome loads it, and Chrome is pinned to
	// the address checked (--host-resolver-rules). Every request Chrome then makes goes
	// through a ChromeProxy started for the run, which dials with the Guard.
	Guard netguard.Guard
	// Dial replaces the Guard's dial in the proxy; nil is Guard.DialContext. Tests use it to
	// map a made-up host to a local server.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	Log  *slog.Logger
}

// Runner runs the Lighthouse CLI and extracts its report like a PSI one (without field data).
// It does not limit its own runs: the pool's Capacity (LIGHTHOUSE_CONCURRENCY, main.go) grants
// each audit a slot, shared fairly between scans, since each run is a Chrome with simulated
// throttling and CPU contention skews its numbers.
type Runner struct {
	cfg  Config
	argv []string
}

// Home is where docs/local-lighthouse.md installs Lighthouse 13 and the Node
// 22 it needs, under the user's home directory; the real-scan test looks there too.
const Home = ".sitepulse/lighthouse"

// InstallCommand is the install command of docs/local-lighthouse.md.
const InstallCommand = "npm install --prefix ~/" + Home + " lighthouse@13 node@22"

// DefaultChromeFlags are the Chrome flags used when none are configured.
const DefaultChromeFlags = "--headless=new --disable-gpu --no-first-run"

// New returns the CLI backend with cfg's defaults filled in.
func New(cfg Config) *Runner {
	if strings.TrimSpace(cfg.Command) == "" {
		cfg.Command = "lighthouse"
	}
	if cfg.ChromeFlags == "" {
		cfg.ChromeFlags = DefaultChromeFlags
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, argv: strings.Fields(cfg.Command)}
}

// ChromeNetworkFlags send every request of Chrome to the run's proxy (proxy is its URL): the
// <-loopback> rule removes Chrome's implicit bypass of localhost and 127.0.0.1, and QUIC is off
// so that nothing leaves beside the proxy. Chrome gives the proxy host names unresolved, so DNS,
// DNS-over-HTTPS included, never chooses a destination. There is no switch to turn DoH off (the
// DnsOverHttps feature is gone by Chrome 156; DnsOverHttpsMode is a policy), and a
// --disable-features here would replace the list chrome-launcher passes before it.
func ChromeNetworkFlags(proxy string) string {
	return "--proxy-server=" + proxy + " --proxy-bypass-list=<-loopback> --disable-quic"
}

// Args are the arguments of one run after the configured command. A valid pin maps the page's
// host to the address the Guard checked; proxy is the run's ChromeProxy.
func (l *Runner) Args(pageURL string, strategy store.Strategy, pin netip.Addr, host, proxy string) []string {
	flags := l.cfg.ChromeFlags + " " + ChromeNetworkFlags(proxy)
	if rule := resolverRule(pin, host); rule != "" {
		flags += ` --host-resolver-rules="` + rule + `"`
	}
	args := []string{pageURL, "--output=json", "--output-path=stdout",
		"--only-categories=performance,accessibility,best-practices,seo",
		"--chrome-flags=" + flags, "--quiet"}
	if strategy == store.StrategyDesktop {
		args = append(args, "--preset=desktop")
	}
	return args
}

// maxLHReport caps the report read from the CLI's stdout.
const maxLHReport = 64 << 20

// Audit runs Lighthouse once. A run is not retried: a page Chrome cannot load fails the same
// way again, and the job's own retries cover a crashed run.
//
// The "lighthouse run" line says how long the address check took before the run started
// (waited) and the run itself (ran). The wait for a slot is not in it: the pipeline takes the
// Capacity slot before it calls Audit.
func (l *Runner) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	return l.audit(ctx, pageURL, strategy, nil)
}

// audit runs Lighthouse once; with s, in a Chrome started and signed in for this run (signedin.go).
func (l *Runner) audit(ctx context.Context, pageURL string, strategy store.Strategy, s *SignedIn) (store.PageResult, error) {
	report, err := l.report(ctx, pageURL, strategy, s)
	if err != nil {
		return store.PageResult{}, err
	}
	return ExtractLighthouse(report)
}

// Report runs Lighthouse once as Audit does and answers its JSON report unread, checked only
// to hold a result (ExtractLighthouse): what a runner posts to the service, which extracts it
// on arrival (docs/runners.md).
func (l *Runner) Report(ctx context.Context, pageURL string, strategy store.Strategy) ([]byte, error) {
	report, err := l.report(ctx, pageURL, strategy, nil)
	if err != nil {
		return nil, err
	}
	if _, err := ExtractLighthouse(report); err != nil {
		return nil, err
	}
	return report, nil
}

// report runs Lighthouse once and answers its JSON report.
func (l *Runner) report(ctx context.Context, pageURL string, strategy store.Strategy, s *SignedIn) ([]byte, error) {
	asked := time.Now()
	host, pin, err := l.cfg.Guard.CheckURL(ctx, pageURL)
	if err != nil {
		return nil, err
	}
	dial := l.cfg.Dial
	if dial == nil {
		dial = l.cfg.Guard.DialContext
	}
	proxy, err := StartChromeProxy(dial, l.cfg.Log)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	started := time.Now()
	var chrome *signedChrome
	defer func() {
		attrs := []any{"url", pageURL, "strategy", strategy, "waited", started.Sub(asked).Round(time.Millisecond),
			"ran", time.Since(started).Round(time.Millisecond), "refused", proxy.Refused()}
		if chrome != nil {
			attrs = append(attrs, "signed_in", s.kind, "auth_answered", chrome.answered.Load(), "auth_refused", chrome.refused.Load())
		}
		l.cfg.Log.Info("lighthouse run", attrs...)
	}()
	runCtx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	args := l.Args(pageURL, strategy, pin, host, proxy.URL())
	if s != nil {
		if chrome, err = s.start(runCtx, l.chromeFlags(pin, host, proxy.URL())); err != nil {
			return nil, err
		}
		defer chrome.Close()
		// Lighthouse attaches to that Chrome; --chrome-flags stay in case it had to start its own.
		args = append(args, "--port="+strconv.Itoa(chrome.port), "--disable-storage-reset")
	}
	cmd := exec.CommandContext(runCtx, l.argv[0], append(l.argv[1:], args...)...)
	cmd.Env = os.Environ()
	if l.cfg.ChromePath != "" {
		cmd.Env = append(cmd.Env, "CHROME_PATH="+l.cfg.ChromePath)
	}
	// Lighthouse closes its Chrome on SIGINT; a kill would orphan it. WaitDelay bounds the wait.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 15 * time.Second
	var stdout limitedBuffer
	stdout.max = maxLHReport
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("Lighthouse run cancelled: %w", context.Cause(ctx))
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("Lighthouse did not finish within %s", l.cfg.Timeout)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("LIGHTHOUSE_CMD %q not found: install Lighthouse 13 with Node 22 (%s) and set LIGHTHOUSE_CMD as docs/local-lighthouse.md says", l.argv[0], InstallCommand)
	}
	if s != nil && !stdout.over { // a page that did not sign in fails so, whatever else went wrong with it
		if err := s.check(chrome, pageURL, stdout.Bytes(), stderr.String()); err != nil {
			return nil, err
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("Lighthouse failed (%v): %s", err, stderr.String())
	case stdout.over:
		return nil, fmt.Errorf("Lighthouse report is larger than %d MiB", maxLHReport>>20)
	}
	return stdout.Bytes(), nil
}

// chromeFlags are the flags of a Chrome started here (signed-in audits): the configured ones and
// the run's network flags, as Args gives Lighthouse, one argument each.
func (l *Runner) chromeFlags(pin netip.Addr, host, proxy string) []string {
	flags := append(strings.Fields(l.cfg.ChromeFlags), strings.Fields(ChromeNetworkFlags(proxy))...)
	if rule := resolverRule(pin, host); rule != "" {
		flags = append(flags, "--host-resolver-rules="+rule)
	}
	return flags
}

// resolverRule maps host to the address the guard checked ("" when there is nothing to pin).
func resolverRule(pin netip.Addr, host string) string {
	if !pin.IsValid() || host == pin.String() {
		return ""
	}
	to := pin.String()
	if pin.Is6() {
		to = "[" + to + "]"
	}
	return "MAP " + host + " " + to
}

// limitedBuffer keeps at most max bytes and notes when more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last 2 KiB written, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return "no output"
	}
	return s
}

var _ io.Writer = (*tailBuffer)(nil)

// CallsNoKey marks the local Lighthouse as an auditor that spends no PSI key (scanner.KeyFree).
func (l *Runner) CallsNoKey() {}
