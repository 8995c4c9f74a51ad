package main

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store/storetest"
)

// demoLines are the lines a process prints about the demo, with its own base URL taken out.
type demoLines struct {
	login, password, key, webhook string
}

var (
	demoLoginLine = regexp.MustCompile(`(?m)^demo login: (\S+) (\S+)$`)
	demoKeyLine   = regexp.MustCompile(`(?m)^demo api key: (svc_\S+)$`)
)

func readDemoLines(t *testing.T, c *child) demoLines {
	t.Helper()
	log := c.log.String()
	var d demoLines
	if m := demoLoginLine.FindStringSubmatch(log); m != nil {
		d.login, d.password = m[1], m[2]
	}
	if m := demoKeyLine.FindStringSubmatch(log); m != nil {
		d.key = m[1]
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "/api/webhooks/platform") && strings.HasPrefix(l, "body=") {
			d.webhook = strings.ReplaceAll(l, c.base, "BASE")
		}
	}
	if d.password == "" || d.key == "" || d.webhook == "" {
		t.Fatalf("%s printed no demo login, key or webhook line:\n%s", c.name, log)
	}
	return d
}

// TestSystemDemoOnTwoProcessesAtOnce: two processes started together with -demo on one fresh
// Postgres database and one AUTH_KEY (issue 37): both come up (the first creates the demo, the
// other finds it), both print the same login, key and webhook line, each works against both
// processes, and a restarted process prints them again.
func TestSystemDemoOnTwoProcessesAtOnce(t *testing.T) {
	if runAsChild() {
		return
	}
	dsn := storetest.SchemaDSN(t) // empty: both processes migrate and seed at once
	env := map[string]string{"DATABASE_URL": dsn, "AUTH_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	procs := []*child{launchChild(t, "a", env, "-demo"), launchChild(t, "b", env, "-demo")}
	for _, p := range procs {
		p.waitHealthy(t)
	}
	if n := strings.Count(procs[0].log.String()+procs[1].log.String(), "new_account=true"); n != 1 {
		t.Errorf("%d processes created the demo account, want 1", n)
	}
	first := readDemoLines(t, procs[0])
	if second := readDemoLines(t, procs[1]); second != first {
		t.Fatalf("the processes printed different demo lines:\n%+v\n%+v", first, second)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range procs {
		resp, err := noRedirect.PostForm(p.base+"/login", url.Values{"email": {first.login}, "password": {first.password}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
			t.Errorf("%s: the printed login answers %d", p.name, resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodPost, p.base+"/api/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+first.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: the printed key answers %d", p.name, resp.StatusCode)
		}
	}
	// A restart resets nothing: the restarted process prints the same lines.
	procs[0].stop(t)
	procs[0] = startChild(t, "a restarted", env, "-demo")
	if again := readDemoLines(t, procs[0]); again != first {
		t.Errorf("after a restart:\n%+v\nbefore:\n%+v", again, first)
	}
	for _, tool := range []string{"bash", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed, the webhook line is not run: %v", tool, err)
		}
	}
	for _, p := range procs {
		sh := exec.Command("bash", "-c", strings.ReplaceAll(first.webhook, "BASE", p.base))
		sh.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := sh.CombinedOutput()
		if err != nil || !publishTaken(out) {
			t.Errorf("%s: the printed webhook line: %v %s", p.name, err, out)
		}
	}
}
