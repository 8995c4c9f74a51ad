// Package runner is `sitepulse runner` (docs/runners.md): the same binary in a third role, beside
// web and worker, that runs audits where it stands. It leases audits from a SitePulse service
// with its runner token, keeps each lease with heartbeats, runs its own Lighthouse
// (RUNNER_CONCURRENCY at once) and posts each Lighthouse JSON report, which the service
// extracts and checks on arrival. It talks to the service over HTTPS only (plain http only to a
// loopback address), and needs nothing inbound: a runner inside a private network audits a
// staging site no cloud service can reach.
package runner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/netguard"
	"sitepulse/store"
)

// Backend runs one audit and answers its Lighthouse JSON report (lighthouse.Runner.Report).
type Backend interface {
	Report(ctx context.Context, pageURL string, strategy store.Strategy) ([]byte, error)
}

// Config is a runner's settings.
type Config struct {
	// ServiceURL is RUNNER_SERVICE_URL, the service's base URL: https, or http to loopback.
	ServiceURL string
	// Token is RUNNER_TOKEN (rnr_...), read from the environment only.
	Token string
	// Name is RUNNER_NAME (default the host name) and Location RUNNER_LOCATION, the label a
	// site's locations name.
	Name, Location string
	// Concurrency is RUNNER_CONCURRENCY: audits run at once. Default 1.
	Concurrency int
	// Poll is how long the runner waits when the service has no audit for it. Default 5 s.
	Poll    time.Duration
	Backend Backend
	Client  *http.Client
	Log     *slog.Logger
}

// ErrRevoked ends a runner whose token the service does not know (revoked, or never made).
var ErrRevoked = errors.New("the service refused this runner's token (revoked or unknown): the runner stops")

// CheckServiceURL refuses a service URL a token must not be sent to: anything but https, except
// http to a loopback address (a service on the same machine, and tests).
func CheckServiceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("RUNNER_SERVICE_URL=%q: want the service's https:// base URL", raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return u, nil
		}
	}
	return nil, fmt.Errorf("RUNNER_SERVICE_URL=%q: a runner talks to the service over https only (plain http only to a loopback address), so its token and reports never cross a network in clear", raw)
}

// Main is `sitepulse runner`: it reads the settings (environment, then flags), builds the local
// Lighthouse backend and runs until ctx ends or the token is refused.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sitepulse runner", flag.ContinueOnError)
	fs.SetOutput(stdout)
	host, _ := os.Hostname()
	service := fs.String("service-url", getenv("RUNNER_SERVICE_URL"), "the service's base URL, https (RUNNER_SERVICE_URL)")
	name := fs.String("name", cmp.Or(getenv("RUNNER_NAME"), host, "runner"), "this runner's name (RUNNER_NAME)")
	location := fs.String("location", getenv("RUNNER_LOCATION"), "this runner's location label, which a site's locations name (RUNNER_LOCATION)")
	concurrency := fs.Int("concurrency", atoi(getenv("RUNNER_CONCURRENCY"), 1), "Lighthouse runs at once (RUNNER_CONCURRENCY)")
	poll := fs.Int("poll-seconds", atoi(getenv("RUNNER_POLL_SECONDS"), 5), "seconds to wait when there is no audit to lease (RUNNER_POLL_SECONDS)")
	backend := fs.String("audit-backend", cmp.Or(getenv("AUDIT_BACKEND"), "lighthouse"), "lighthouse: a runner runs the local Lighthouse CLI (AUDIT_BACKEND)")
	lhCmd := fs.String("lighthouse-cmd", cmp.Or(getenv("LIGHTHOUSE_CMD"), "lighthouse"), "Lighthouse CLI (LIGHTHOUSE_CMD)")
	chrome := fs.String("chrome-path", getenv("CHROME_PATH"), "Chrome or Chromium binary (CHROME_PATH)")
	flags := fs.String("lighthouse-chrome-flags", cmp.Or(getenv("LIGHTHOUSE_CHROME_FLAGS"), lighthouse.DefaultChromeFlags), "Chrome flags (LIGHTHOUSE_CHROME_FLAGS)")
	private := fs.Bool("allow-private", getenv("RUNNER_ALLOW_PRIVATE") != "false", "audit private and loopback addresses, such as a staging site inside this network (RUNNER_ALLOW_PRIVATE, default true)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sitepulse runner takes flags only, not %q (sitepulse runner -h)", fs.Arg(0))
	}
	if *backend != "lighthouse" {
		return fmt.Errorf("AUDIT_BACKEND=%q: a runner runs the local Lighthouse (lighthouse)", *backend)
	}
	log := slog.New(slog.NewTextHandler(stdout, nil))
	guard := netguard.Guard{AllowPrivate: *private}
	cfg := Config{ServiceURL: *service, Token: strings.TrimSpace(getenv("RUNNER_TOKEN")), Name: *name, Location: *location,
		Concurrency: *concurrency, Poll: time.Duration(*poll) * time.Second, Log: log,
		Backend: lighthouse.New(lighthouse.Config{Command: *lhCmd, ChromePath: *chrome, ChromeFlags: *flags, Guard: guard, Log: log})}
	return Run(ctx, cfg)
}

func atoi(s string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
		return n
	}
	return def
}

// Run leases and runs audits, Concurrency at once, until ctx ends (nil) or the service refuses
// the token (ErrRevoked).
func Run(ctx context.Context, cfg Config) error {
	u, err := CheckServiceURL(cfg.ServiceURL)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(cfg.Token, "rnr_") {
		return errors.New("RUNNER_TOKEN is not set to a runner token (rnr_...): an owner makes one on the workspace page, Runners")
	}
	if cfg.Backend == nil {
		return errors.New("no audit backend")
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.Client == nil {
		// No redirects: the token goes to the configured service only, as it was checked.
		cfg.Client = &http.Client{Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &runner{cfg: cfg, base: u.String()}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cfg.Log.Info("runner started", "service", r.base, "name", cfg.Name, "location", cfg.Location, "concurrency", cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.loop(ctx); err != nil {
				stop(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); errors.Is(err, ErrRevoked) {
		cfg.Log.Error("runner stopped", "reason", err)
		return err
	}
	cfg.Log.Info("runner stopped")
	return nil
}

type runner struct {
	cfg  Config
	base string
}

// lease is the service's answer to a lease request.
type lease struct {
	LeaseID          string         `json:"leaseId"`
	URL              string         `json:"url"`
	Strategy         store.Strategy `json:"strategy"`
	LeaseUntil       time.Time      `json:"leaseUntil"`
	HeartbeatSeconds int            `json:"heartbeatSeconds"`
}

// errGone is a 410: the lease expired or is another runner's now.
var errGone = errors.New("the lease is gone (expired, or another runner's now)")

// loop leases one audit at a time and runs it, until ctx ends or the token is refused.
func (r *runner) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		l, err := r.lease(ctx)
		switch {
		case errors.Is(err, ErrRevoked):
			return err
		case err != nil:
			if ctx.Err() == nil {
				r.cfg.Log.Warn("runner: lease failed", "err", err)
			}
			sleep(ctx, r.cfg.Poll)
			continue
		case l == nil:
			sleep(ctx, r.cfg.Poll)
			continue
		}
		if err := r.run(ctx, *l); errors.Is(err, ErrRevoked) {
			return err
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// run runs one leased audit, heartbeating until its report is posted; a lease found gone stops
// the audit (another runner has it).
func (r *runner) run(ctx context.Context, l lease) error {
	r.cfg.Log.Info("runner: leased", "url", l.URL, "strategy", l.Strategy, "lease_until", l.LeaseUntil.Format(time.RFC3339))
	auditCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		every := time.Duration(max(l.HeartbeatSeconds, 1)) * time.Second
		for {
			sleep(auditCtx, every)
			if auditCtx.Err() != nil {
				return
			}
			if err := r.post(auditCtx, "/api/runner/leases/"+l.LeaseID+"/heartbeat", []byte(`{}`), nil); errors.Is(err, errGone) || errors.Is(err, ErrRevoked) {
				cancel(err)
				return
			} else if err != nil && auditCtx.Err() == nil {
				r.cfg.Log.Warn("runner: heartbeat failed", "err", err)
			}
		}
	}()
	began := time.Now()
	report, err := r.cfg.Backend.Report(auditCtx, l.URL, l.Strategy)
	stopped := context.Cause(auditCtx)
	cancel(nil)
	<-beats
	if ctx.Err() != nil {
		return nil
	}
	if errors.Is(stopped, ErrRevoked) {
		return stopped
	}
	if errors.Is(stopped, errGone) {
		r.cfg.Log.Warn("runner: lease lost during the audit; another runner has it", "url", l.URL, "strategy", l.Strategy)
		return nil
	}
	body, _ := json.Marshal(map[string]any{"report": json.RawMessage(report)})
	if err != nil {
		r.cfg.Log.Warn("runner: audit failed", "url", l.URL, "strategy", l.Strategy, "err", err)
		body, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	switch err := r.post(ctx, "/api/runner/leases/"+l.LeaseID+"/result", body, nil); {
	case errors.Is(err, ErrRevoked):
		return err
	case err != nil:
		r.cfg.Log.Warn("runner: result refused", "url", l.URL, "strategy", l.Strategy, "err", err)
	default:
		r.cfg.Log.Info("runner: finished", "url", l.URL, "strategy", l.Strategy, "took", time.Since(began).Round(time.Millisecond),
			"benchmark_index", lighthouse.BenchmarkIndex(report))
	}
	return nil
}

// lease asks for one audit; nil when the service has none for this runner.
func (r *runner) lease(ctx context.Context) (*lease, error) {
	body, _ := json.Marshal(map[string]string{"runner": r.cfg.Name, "location": r.cfg.Location})
	var l lease
	if err := r.post(ctx, "/api/runner/leases", body, &l); err != nil {
		return nil, err
	}
	if l.LeaseID == "" {
		return nil, nil
	}
	return &l, nil
}

// post sends one call of the protocol; a 204 leaves out untouched.
func (r *runner) post(ctx context.Context, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return ErrRevoked
	case resp.StatusCode == http.StatusGone:
		return errGone
	case resp.StatusCode == http.StatusNoContent:
		return nil
	case resp.StatusCode != http.StatusOK:
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal(b, &e)
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, strings.ToValidUTF8(string(e.Error), "?"))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
