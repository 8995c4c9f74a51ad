package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/ci/citest"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The CI client against the real service, both real processes of this binary: `sitepulse
// check` starts a scan with an API key, waits for it through the budget check, writes the
// Markdown summary and the JUnit report, sets the commit status on the GitHub double (its
// request checked exactly), and exits 1 when a budget is broken and 0 when not.

const (
	checkSHA   = "0123456789abcdef0123456789abcdef01234567"
	checkRepo  = "octo-org/octo-repo"
	checkToken = "ghs_checktoken"
)

// checkRun is one `sitepulse check` process and what it left.
type checkRun struct {
	exit              int
	stdout, summary   string
	junit             junitReport
	statuses          []citest.GitHubRequest
	summaryPath, junP string
}

type junitReport struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// runCheckProcess runs `sitepulse check args...` as a process of this test binary, in the
// environment a GitHub Actions step has (and none of the machine's own GITHUB_ or SITEPULSE_
// variables), against base with key and site, the commit status going to g.
func runCheckProcess(t *testing.T, base, key, siteID string, g *citest.GitHub, args ...string) checkRun {
	t.Helper()
	dir := t.TempDir()
	r := checkRun{summaryPath: filepath.Join(dir, "summary.md"), junP: filepath.Join(dir, "sitepulse.xml")}
	before := len(g.Received())
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + regexp.QuoteMeta(strings.Split(t.Name(), "/")[0]) + "$", "--", "check", "-junit", r.junP}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITHUB_") && !strings.HasPrefix(kv, "SITEPULSE_") && !strings.HasPrefix(kv, "CI_") && !strings.HasPrefix(kv, "GITLAB_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, childEnv+"=1", "SITEPULSE_URL="+base, "SITEPULSE_API_KEY="+key, "SITEPULSE_SITE_ID="+siteID,
		"GITHUB_STEP_SUMMARY="+r.summaryPath, "GITHUB_TOKEN="+checkToken, "GITHUB_REPOSITORY="+checkRepo, "GITHUB_SHA="+checkSHA,
		"GITHUB_API_URL="+g.URL, "GITHUB_ACTOR=octocat")
	out, err := cmd.CombinedOutput()
	r.stdout = string(out)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(r.summaryPath)
	r.summary = string(summary)
	if x, err := os.ReadFile(r.junP); err == nil {
		if err := xml.Unmarshal(x, &r.junit); err != nil {
			t.Errorf("the JUnit report is not XML: %v\n%s", err, x)
		}
	}
	r.statuses = g.Received()[before:]
	return r
}

// wantStatus checks the one commit status a run set: exactly the request GitHub expects.
func wantStatus(t *testing.T, r checkRun, state, targetURL, descriptionPrefix string) {
	t.Helper()
	if len(r.statuses) != 1 {
		t.Fatalf("%d commit status requests, want 1:\n%s", len(r.statuses), r.stdout)
	}
	req := r.statuses[0]
	var body map[string]string
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatalf("status body %s: %v", req.Body, err)
	}
	if req.Method != "POST" || req.Path != "/repos/"+checkRepo+"/statuses/"+checkSHA || req.Header.Get("Authorization") != "Bearer "+checkToken ||
		req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Accept") != "application/vnd.github+json" {
		t.Errorf("status request %s %s, headers %v", req.Method, req.Path, req.Header)
	}
	keys := 4
	if targetURL == "" { // no scan to link to
		keys = 3
	}
	if len(body) != keys || body["state"] != state || body["target_url"] != targetURL || body["context"] != "sitepulse" ||
		!strings.HasPrefix(body["description"], descriptionPrefix) || len([]rune(body["description"])) > 140 {
		t.Errorf("status body %s; want state %s, target_url %s, context sitepulse, a description starting %q", req.Body, state, targetURL, descriptionPrefix)
	}
}

var scanStartedLine = regexp.MustCompile(`SitePulse: scan ([0-9a-f-]{36}) started: (\S+)`)

// TestSystemCheckOnPostgres: a site of its own, audited through the PSI double. Its budget of
// performance 95 is broken (exit 1, status failure); relaxed to 1 it holds (exit 0, success).
// The deploy's commit and who published are recorded with each scan.
func TestSystemCheckOnPostgres(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	psi := scantest.NewPSI(t, "testdata/psi")
	now := time.Now()
	user := store.User{ID: store.NewID(), Email: "ci@example.com", PasswordHash: "x", CreatedAt: now}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Sample", Domain: "sample.test", Pages: scantest.SamplePages(), CreatedAt: now}
	key, keyHash := store.NewSecret("svc_")
	for _, err := range []error{st.CreateUser(ctx, user), st.CreateSite(ctx, site),
		st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: user.ID, Name: "ci", KeyHash: keyHash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: now}),
		st.SetBudgets(ctx, user.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 95}})} {
		if err != nil {
			t.Fatal(err)
		}
	}
	server := startChild(t, "server", map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint()})
	g := citest.NewGitHub(t, checkToken, checkRepo)

	broken := runCheckProcess(t, server.base, key, site.ID, g)
	m := scanStartedLine.FindStringSubmatch(broken.stdout)
	if broken.exit != 1 || m == nil || !strings.Contains(broken.stdout, "Sample breaks 1 budget") {
		t.Fatalf("broken budgets: exit %d, want 1:\n%s\nserver:\n%s", broken.exit, broken.stdout, server.log)
	}
	scanID, scanURL := m[1], server.base+"/sites/"+site.ID+"/scans/"+m[1]
	if m[2] != scanURL {
		t.Errorf("scan URL %s, want %s", m[2], scanURL)
	}
	wantStatus(t, broken, "failure", scanURL, "1 budget broken: Performance ")
	if !strings.Contains(broken.summary, "### ❌ SitePulse: Sample breaks 1 budget") || !strings.Contains(broken.summary, "| Performance | ") ||
		!strings.Contains(broken.summary, "commit `0123456`") || !strings.Contains(broken.summary, "published by octocat") {
		t.Errorf("summary:\n%s", broken.summary)
	}
	if broken.junit.Tests != 1 || broken.junit.Failures != 1 || broken.junit.Suites[0].Cases[0].Name != "Performance ≥ 95" {
		t.Errorf("JUnit report %+v", broken.junit)
	}
	sc, err := st.Scan(ctx, user.ID, scanID)
	if err != nil || sc.Status != store.StatusComplete || sc.Trigger != store.TriggerAPI || psi.Total() != 10 {
		t.Errorf("scan %+v (%v), %d PSI calls; want complete, trigger api, 10 calls", sc, err, psi.Total())
	}
	pubs, _ := st.PublishesOfScans(ctx, user.ID, []string{scanID})
	if p := pubs[scanID]; p.Commit != checkSHA || p.PublishedBy != "octocat" {
		t.Errorf("the scan's publish = %+v, want commit %s by octocat", p, checkSHA)
	}

	if err := st.SetBudgets(ctx, user.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	met := runCheckProcess(t, server.base, key, site.ID, g, "-pages", "/fast,/about", "-strategy", "mobile")
	m = scanStartedLine.FindStringSubmatch(met.stdout)
	if met.exit != 0 || m == nil || !strings.Contains(met.stdout, "Sample meets its budgets") {
		t.Fatalf("budgets met: exit %d, want 0:\n%s", met.exit, met.stdout)
	}
	wantStatus(t, met, "success", server.base+"/sites/"+site.ID+"/scans/"+m[1], "Budgets met on Sample")
	if !strings.Contains(met.summary, "### ✅ SitePulse: Sample meets its budgets") || met.junit.Failures != 0 || met.junit.Tests != 1 {
		t.Errorf("summary:\n%s\nJUnit %+v", met.summary, met.junit)
	}
	if got := psi.Total(); got != 12 {
		t.Errorf("%d PSI calls in all; want 12 (10, then /fast and /about on mobile)", got)
	}
	server.stop(t)
}

// TestSystemCheckOnTheDemo: on the in-memory store, the demo site (its audits replayed from
// recorded runs, alternating between the site before and after its bad publish): the whole
// site breaks its budgets (exit 1), fewer on the recovery, all five after the publish again; its
// fast page alone meets them (exit 0); a key that is not one cannot judge (exit 2, status error).
func TestSystemCheckOnTheDemo(t *testing.T) {
	if runAsChild() {
		return
	}
	// The in-memory store, whatever DATABASE_URL the tests run with.
	server := startChild(t, "server", map[string]string{"DATABASE_URL": "", "PAGESPEED_API_URL": "http://" + freeAddr(t) + "/closed"})
	logs := server.log.String()
	key := regexp.MustCompile(`demo api key: (svc_\S+)`).FindStringSubmatch(logs)
	site := regexp.MustCompile(`"siteId":"([0-9a-f-]{36})"`).FindStringSubmatch(logs)
	if key == nil || site == nil {
		t.Fatalf("no demo key or site in the start-up output:\n%s", logs)
	}
	g := citest.NewGitHub(t, checkToken, checkRepo)

	// The demo's first new scan replays the site before the bad publish: its recovery.
	recovered := runCheckProcess(t, server.base, key[1], site[1], g)
	if recovered.exit != 1 || !strings.Contains(recovered.stdout, "Demo Site breaks 3 budgets") {
		t.Fatalf("the recovery scan: exit %d, want 1 and %q:\n%s", recovered.exit, "Demo Site breaks 3 budgets", recovered.stdout)
	}
	broken := runCheckProcess(t, server.base, key[1], site[1], g)
	m := scanStartedLine.FindStringSubmatch(broken.stdout)
	if broken.exit != 1 || m == nil || !strings.Contains(broken.stdout, "Demo Site breaks 5 budgets") {
		t.Fatalf("the regressed scan: exit %d, want 1 and %q:\n%s", broken.exit, "Demo Site breaks 5 budgets", broken.stdout)
	}
	wantStatus(t, broken, "failure", server.base+"/sites/"+site[1]+"/scans/"+m[1], "5 budgets broken: Performance 75, under the minimum of 80")
	if broken.junit.Tests != 5 || broken.junit.Failures != 5 {
		t.Errorf("JUnit %+v", broken.junit)
	}

	met := runCheckProcess(t, server.base, key[1], site[1], g, "-pages", "/fast")
	m = scanStartedLine.FindStringSubmatch(met.stdout)
	if met.exit != 0 || m == nil {
		t.Fatalf("exit %d, want 0:\n%s", met.exit, met.stdout)
	}
	wantStatus(t, met, "success", server.base+"/sites/"+site[1]+"/scans/"+m[1], "Budgets met on Demo Site")

	denied := runCheckProcess(t, server.base, "svc_notakey", site[1], g)
	if denied.exit != 2 || !strings.Contains(denied.stdout, "401") {
		t.Errorf("an unknown key: exit %d, want 2:\n%s", denied.exit, denied.stdout)
	}
	wantStatus(t, denied, "error", "", "Could not judge: starting a scan: 401 Unauthorized")
	server.stop(t)
}
