package ci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sitepulse/scanner/analysis"
)

// `sitepulse check` is the CI client of a SitePulse service, in the same binary: it starts a
// scan of a site (or judges the latest), waits for it, prints the verdict, writes the Markdown
// summary to $GITHUB_STEP_SUMMARY and the JUnit report when asked, sets a GitHub commit status,
// and exits 0 when the budgets hold, 1 when they are broken, 2 when it could not judge.

// ExitCode ends the process with Code; Err, when set, is the reason main prints.
type ExitCode struct {
	Code int
	Err  error
}

func (e *ExitCode) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitCode) Unwrap() error { return e.Err }

// cannotJudge is exit 2 with its reason, one line with nothing of the service's that a
// terminal or a runner would act on (safeLine): main prints it.
func cannotJudge(format string, a ...any) error {
	return &ExitCode{Code: 2, Err: errors.New(safeLine(fmt.Sprintf(format, a...)))}
}

// checkConfig is what `sitepulse check` was asked to do.
type checkConfig struct {
	baseURL, apiKey, siteID string
	scanID                  string // judge this scan instead of starting one
	latest                  bool   // judge the latest scan (waiting for one in flight) instead of starting one
	wait                    time.Duration
	pages                   []string
	strategy                string
	commit, publishedBy     string
	junit, summary, md      string // files to write; "" writes none
	status                  bool   // set a GitHub commit status when the environment allows
	github                  githubEnv
}

// maxWaitPerRequest is the service's bound on one budget check's wait (waitSeconds).
const maxWaitPerRequest = 600 * time.Second

func parseCheck(args []string, getenv func(string) string, out io.Writer) (checkConfig, error) {
	fs := flag.NewFlagSet("sitepulse check", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: sitepulse check [flags]

Starts a SitePulse scan of a site (or judges its latest scan), waits for it, and judges it
against the site's budgets. Exit status: 0 the budgets hold, 1 they are broken, 2 it could not
judge (the reason is printed). A service that answers 429 or 5xx, or does not answer in time,
is asked again while -wait lasts; one that cannot be reached (no such host, connection
refused) cannot judge, at once. What the service sends is printed and written with its
control characters dropped and workflow-command prefixes made inert. The API key is read from
SITEPULSE_API_KEY only, so it never shows in a process list; it must be allowed to start scans
unless -latest or -scan is given.

With GITHUB_STEP_SUMMARY set the Markdown verdict is appended to it; with GITHUB_TOKEN,
GITHUB_REPOSITORY and GITHUB_SHA set (as in GitHub Actions; GITHUB_API_URL for GitHub
Enterprise) the commit gets a status named "sitepulse" linking to the scan.

Flags:
`)
		fs.PrintDefaults()
	}
	c := checkConfig{apiKey: getenv("SITEPULSE_API_KEY"), status: true}
	fs.StringVar(&c.baseURL, "url", getenv("SITEPULSE_URL"), "the SitePulse service's address (SITEPULSE_URL)")
	fs.StringVar(&c.siteID, "site", getenv("SITEPULSE_SITE_ID"), "the site's id, from its page's \"Budget check in CI\" card (SITEPULSE_SITE_ID)")
	fs.StringVar(&c.scanID, "scan", "", "judge this scan instead of starting one")
	fs.BoolVar(&c.latest, "latest", false, "judge the latest scan instead of starting one (a scan in flight is waited for)")
	fs.DurationVar(&c.wait, "wait", 15*time.Minute, "how long to wait for the scan to finish")
	pages := fs.String("pages", "", "comma-separated page paths to scan instead of the site's, such as /,/pricing")
	fs.StringVar(&c.strategy, "strategy", "both", "mobile, desktop or both")
	fs.StringVar(&c.commit, "commit", firstOf(getenv, "GITHUB_SHA", "CI_COMMIT_SHA"), "the commit deployed, recorded with the scan (default GITHUB_SHA or CI_COMMIT_SHA)")
	fs.StringVar(&c.publishedBy, "published-by", firstOf(getenv, "GITHUB_ACTOR", "GITLAB_USER_LOGIN"), "who deployed, recorded with the scan (default GITHUB_ACTOR or GITLAB_USER_LOGIN)")
	fs.StringVar(&c.junit, "junit", "", "write the JUnit XML report to this file (GitLab, Jenkins, Azure DevOps)")
	fs.StringVar(&c.summary, "summary", getenv("GITHUB_STEP_SUMMARY"), "append the Markdown verdict to this file (default GITHUB_STEP_SUMMARY)")
	fs.StringVar(&c.md, "markdown", "", "write the Markdown verdict to this file too (a pull request comment)")
	fs.BoolVar(&c.status, "commit-status", true, "set a GitHub commit status when GITHUB_TOKEN, GITHUB_REPOSITORY and GITHUB_SHA are set")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, &ExitCode{Code: 0}
		}
		return c, cannotJudge("%v", err)
	}
	if fs.NArg() > 0 {
		return c, cannotJudge("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	for _, p := range strings.Split(*pages, ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.pages = append(c.pages, p)
		}
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	switch {
	case c.baseURL == "":
		return c, cannotJudge("no service address: set SITEPULSE_URL or -url")
	case !strings.HasPrefix(c.baseURL, "https://") && !strings.HasPrefix(c.baseURL, "http://"):
		return c, cannotJudge("SITEPULSE_URL must start with https:// (or http://), got %q", c.baseURL)
	case c.apiKey == "":
		return c, cannotJudge("no API key: set SITEPULSE_API_KEY (a repository secret)")
	case c.siteID == "":
		return c, cannotJudge("no site: set SITEPULSE_SITE_ID or -site")
	case c.wait <= 0:
		return c, cannotJudge("-wait must be positive")
	}
	c.github = githubFrom(getenv)
	return c, nil
}

func firstOf(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// checkVerdict is the budget check's JSON answer as the client reads it.
type checkVerdict struct {
	Pass       bool             `json:"pass"`
	Site       string           `json:"site"`
	Violations []checkViolation `json:"violations"`
	ScanID     *string          `json:"scanId"`
	Status     *string          `json:"status"`
	Reason     *string          `json:"reason"`
	ScanURL    *string          `json:"scanUrl"`
	Changes    []struct {
		Metric   string `json:"metric"`
		PagePath string `json:"pagePath"`
	} `json:"changes"`
}

// checkViolation is a broken budget as the budget check's JSON says it.
type checkViolation struct {
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	Actual    float64 `json:"actual"`
	Operator  string  `json:"operator"`
	PagePath  string  `json:"pagePath"`
	Strategy  string  `json:"strategy"`
}

func (v checkVerdict) judged() bool { return v.Status != nil && *v.Status == "complete" }

// inert makes every string of the service's one safe line (safeLine), as printed.
func (v *checkVerdict) inert() {
	v.Site = safeLine(v.Site)
	for _, p := range []*string{v.ScanID, v.Status, v.Reason, v.ScanURL} {
		if p != nil {
			*p = safeLine(*p)
		}
	}
	for i := range v.Violations {
		x := &v.Violations[i]
		x.Metric, x.Operator, x.PagePath, x.Strategy = safeLine(x.Metric), safeLine(x.Operator), safeLine(x.PagePath), safeLine(x.Strategy)
	}
}

// checkScan is a scan as POST /api/external/scans and a 202 show it.
type checkScan struct {
	ScanID         string `json:"scanId"`
	Status         string `json:"status"`
	PagesDone      int    `json:"pagesDone"`
	PagesTotal     int    `json:"pagesTotal"`
	URL            string `json:"url"`
	AlreadyRunning bool   `json:"alreadyRunning"`
}

// inert makes every string of the service's one safe line (safeLine), as printed.
func (sc *checkScan) inert() {
	sc.ScanID, sc.Status, sc.URL = safeLine(sc.ScanID), safeLine(sc.Status), safeLine(sc.URL)
}

// checker is one run of `sitepulse check`.
type checker struct {
	checkConfig
	client *http.Client
	out    io.Writer
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
}

// RunCheck is `sitepulse check args...`: it answers nil when the budgets hold (or -help was
// asked), else an *ExitCode (1: broken, 2: could not judge, with why).
func RunCheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := parseCheck(args, getenv, stdout)
	if err != nil {
		var exit *ExitCode
		if errors.As(err, &exit) && exit.Code == 0 {
			return nil // -help
		}
		return err
	}
	c := &checker{checkConfig: cfg, client: &http.Client{}, out: safeWriter{stdout}, sleep: sleepCtx, now: time.Now}
	return c.run(ctx)
}

func (c *checker) run(ctx context.Context) error {
	var scanURL string
	if c.scanID == "" && !c.latest {
		sc, err := c.start(ctx)
		if err != nil {
			return c.finish(ctx, nil, "", err)
		}
		c.scanID, scanURL = sc.ScanID, sc.URL
		if sc.AlreadyRunning {
			fmt.Fprintf(c.out, "SitePulse: the site already had scan %s running (it started before this call); judging it: %s\n", sc.ScanID, sc.URL)
		} else {
			fmt.Fprintf(c.out, "SitePulse: scan %s started: %s\n", sc.ScanID, sc.URL)
		}
	}
	v, err := c.judge(ctx)
	if err != nil {
		return c.finish(ctx, nil, scanURL, err)
	}
	return c.finish(ctx, &v, scanURL, nil)
}

// start asks the service for a scan.
func (c *checker) start(ctx context.Context) (checkScan, error) {
	body := map[string]any{"siteId": c.siteID, "strategy": c.strategy}
	if len(c.pages) > 0 {
		body["pages"] = c.pages
	}
	if c.commit != "" {
		body["commit"] = c.commit
	}
	if c.publishedBy != "" {
		body["publishedBy"] = c.publishedBy
	}
	var sc checkScan
	resp, raw, err := c.post(ctx, "/api/external/scans", "", body, time.Minute)
	if err != nil {
		return sc, cannotJudge("starting a scan: %v", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return sc, cannotJudge("starting a scan: %s", serviceError(resp, raw))
	}
	if err := json.Unmarshal(raw, &sc); err != nil || sc.ScanID == "" {
		return sc, cannotJudge("starting a scan: the service's answer is not a scan: %.200s", raw)
	}
	sc.inert()
	return sc, nil
}

// judge asks for the verdict, waiting (in requests of at most 10 minutes each) until the scan
// finishes or c.wait runs out. A service restarting or overloaded is retried while time is
// left: it answers 202 when it shuts down during a wait, 429 past its cap of waits, 503 in an
// outage, 502 to 504 behind a proxy; a request that timed out or whose connection broke is
// retried too. A name that does not resolve or a connection refused is an answer: the check
// cannot judge, at once.
func (c *checker) judge(ctx context.Context) (checkVerdict, error) {
	var v checkVerdict
	deadline := c.now().Add(c.wait)
	failures := 0
	for {
		left := deadline.Sub(c.now()).Truncate(time.Second)
		waitFor := min(max(left, 0), maxWaitPerRequest)
		resp, raw, err := c.post(ctx, "/api/external/budget-check", "json", c.judgeBody(waitFor), waitFor+time.Minute)
		retry, last := time.Duration(0), ""
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return v, cannotJudge("interrupted: %v", ctx.Err())
			}
			if !transient(err) {
				return v, cannotJudge("cannot reach the service: %v", err)
			}
			failures++
			retry, last = backoff(failures), err.Error()
			fmt.Fprintf(c.out, "SitePulse: the service did not answer (%v); retrying in %s\n", err, retry)
		case resp.StatusCode == http.StatusOK:
			if err := json.Unmarshal(raw, &v); err != nil {
				return v, cannotJudge("the service's verdict is not JSON: %.200s", raw)
			}
			v.inert()
			return v, nil
		case resp.StatusCode == http.StatusAccepted:
			failures = 0
			var sc checkScan
			json.Unmarshal(raw, &sc)
			sc.inert()
			if deadline.Sub(c.now()) <= 0 {
				return v, cannotJudge("the scan %s is still %s after %s (%d of %d audits done): %s", sc.ScanID, sc.Status, c.wait, sc.PagesDone, sc.PagesTotal, sc.URL)
			}
			fmt.Fprintf(c.out, "SitePulse: scan %s %s, %d of %d audits done\n", sc.ScanID, sc.Status, sc.PagesDone, sc.PagesTotal)
			retry = retryAfterHeader(resp, 0)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			failures++
			retry, last = retryAfterHeader(resp, backoff(failures)), serviceError(resp, raw)
			fmt.Fprintf(c.out, "SitePulse: %s; retrying in %s\n", last, retry)
		default:
			return v, cannotJudge("%s", serviceError(resp, raw))
		}
		if failures > 6 {
			return v, cannotJudge("the service kept failing; last: %s", last)
		}
		if last != "" && deadline.Sub(c.now()) <= retry {
			return v, cannotJudge("no verdict within %s; last: %s", c.wait, last)
		}
		if err := c.sleep(ctx, retry); err != nil {
			return v, cannotJudge("interrupted: %v", err)
		}
	}
}

// transient says whether a request that got no answer may get one when tried again: it timed
// out, or its connection broke mid-way. A name that does not resolve, a connection refused, a
// certificate refused are answers.
func transient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func (c *checker) judgeBody(wait time.Duration) map[string]any {
	body := map[string]any{"siteId": c.siteID, "waitSeconds": int(wait.Seconds())}
	if c.scanID != "" {
		body["scanId"] = c.scanID
	}
	return body
}

// report fetches the verdict of the judged scan again in a format (markdown, junit).
func (c *checker) report(ctx context.Context, v *checkVerdict, format string) ([]byte, error) {
	body := map[string]any{"siteId": c.siteID}
	if v != nil && v.ScanID != nil {
		body["scanId"] = *v.ScanID
	} else if c.scanID != "" {
		body["scanId"] = c.scanID
	}
	resp, raw, err := c.post(ctx, "/api/external/budget-check", format, body, time.Minute)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, errors.New(serviceError(resp, raw))
	}
	return raw, nil
}

// finish prints the verdict (or why there is none), writes the summary, the Markdown and the
// JUnit files, sets the commit status, and answers the exit status.
func (c *checker) finish(ctx context.Context, v *checkVerdict, scanURL string, failed error) error {
	outcome := failed
	if v != nil {
		if v.ScanURL != nil {
			scanURL = *v.ScanURL
		}
		c.printVerdict(*v)
		switch {
		case !v.judged():
			outcome = cannotJudge("%s", deref(v.Reason))
		case !v.Pass:
			outcome = &ExitCode{Code: 1}
		}
	}
	if failed == nil { // the service answered: its own words for the reports
		if c.summary != "" || c.md != "" {
			if md, err := c.report(ctx, v, "markdown"); err != nil {
				fmt.Fprintf(c.out, "SitePulse: could not fetch the Markdown summary: %v\n", err)
			} else {
				md = []byte(safeText(string(md), true))
				c.writeFile(c.summary, md, true)
				c.writeFile(c.md, md, false)
			}
		}
		if c.junit != "" {
			if x, err := c.report(ctx, v, "junit"); err != nil {
				fmt.Fprintf(c.out, "SitePulse: could not fetch the JUnit report: %v\n", err)
			} else {
				c.writeFile(c.junit, x, false)
			}
		}
	}
	if c.status && c.github.ready() {
		st := statusOf(v, outcome, scanURL)
		if err := c.github.setStatus(ctx, c.client, st); err != nil {
			fmt.Fprintf(c.out, "SitePulse: could not set the commit status: %v\n", err)
		} else {
			fmt.Fprintf(c.out, "SitePulse: commit status %q set on %s\n", st.State, c.github.sha)
		}
	}
	return outcome
}

func (c *checker) printVerdict(v checkVerdict) {
	scan := ""
	if v.ScanID != nil {
		scan = " (scan " + *v.ScanID
		if v.ScanURL != nil {
			scan += ", " + *v.ScanURL
		}
		scan += ")"
	}
	switch {
	case !v.judged():
		fmt.Fprintf(c.out, "SitePulse: could not judge %s%s: %s\n", v.Site, scan, deref(v.Reason))
		return
	case v.Pass:
		fmt.Fprintf(c.out, "SitePulse: %s meets its budgets%s\n", v.Site, scan)
	default:
		fmt.Fprintf(c.out, "SitePulse: %s breaks %d budget%s%s\n", v.Site, len(v.Violations), pluralS(len(v.Violations)), scan)
	}
	for _, x := range v.Violations {
		fmt.Fprintf(c.out, "  ✗ %s\n", violationText(x.Metric, x.Operator, x.Threshold, x.Actual, x.PagePath, x.Strategy))
	}
	if n := len(v.Changes); n > 0 {
		fmt.Fprintf(c.out, "  %d regression%s since the previous scan\n", n, pluralS(n))
	}
}

// violationText says a broken budget in a line: "Performance 75, under the minimum of 80".
func violationText(metric, op string, threshold, actual float64, path, strategy string) string {
	s := analysis.Label(metric) + " " + valueText(metric, actual)
	if path != "" {
		s += " on " + path
	}
	if strategy != "" {
		s += " (" + strategy + ")"
	}
	if op == "max" {
		return s + ", over the maximum of " + valueText(metric, threshold)
	}
	return s + ", under the minimum of " + valueText(metric, threshold)
}

func valueText(metric string, v float64) string {
	m, _ := analysis.Lookup(metric)
	switch {
	case m.Unit == "ms":
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	case m.Kind == analysis.Vital:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// writeFile writes (or appends to) a report file; a failure is said, not fatal: the verdict stands.
func (c *checker) writeFile(path string, b []byte, appendTo bool) {
	if path == "" {
		return
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(c.out, "SitePulse: could not write %s: %v\n", path, err)
		return
	}
	fmt.Fprintf(c.out, "SitePulse: wrote %s\n", path)
}

// post sends a JSON body with the API key and reads the answer (at most 4 MiB).
func (c *checker) post(ctx context.Context, path, format string, body any, timeout time.Duration) (*http.Response, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := c.baseURL + path
	if format != "" {
		u += "?format=" + format
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sitepulse-check")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp, raw, err
}

// serviceError says what the service answered to a request that failed: its {error}, or the status.
func serviceError(resp *http.Response, raw []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	msg := resp.Status
	if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			msg += ": " + s
		} else {
			msg += ": " + string(e.Error) // a 422's {formErrors, fieldErrors}
		}
	}
	return safeLine(msg)
}

func retryAfterHeader(resp *http.Response, def time.Duration) time.Duration {
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, 5*time.Minute)
	}
	return def
}

// backoff is the pause before the n-th retry: 2 s doubling, at most 30 s.
func backoff(n int) time.Duration {
	return min(time.Duration(1<<min(n, 5))*time.Second, 30*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
