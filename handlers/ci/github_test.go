package ci

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sitepulse/handlers/ci/citest"
)

// TestCommitStatus: the status of each outcome, and the request GitHub gets for it, exactly:
// the double refuses anything GitHub would.
func TestCommitStatus(t *testing.T) {
	const sha = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
	g := citest.NewGitHub(t, "ghs_token", "octo-org/octo-repo")
	env := githubEnv{token: "ghs_token", repo: "octo-org/octo-repo", sha: sha, apiURL: g.URL}
	complete, failed := "complete", "failed"
	reason := "The scan failed: no page could be audited"
	pass := &checkVerdict{Pass: true, Site: "Shop", Status: &complete}
	broken := &checkVerdict{Site: "Shop", Status: &complete}
	broken.Violations = append(broken.Violations, checkViolation{"lcp", 2500, 8305, "max", "/" + strings.Repeat("long-path/", 20), "mobile"})
	unjudged := &checkVerdict{Site: "Shop", Status: &failed, Reason: &reason}
	tests := []struct {
		name    string
		v       *checkVerdict
		outcome error
		want    commitStatus
	}{
		{"budgets met: success", pass, nil, commitStatus{State: "success", TargetURL: "https://sp.test/s", Description: "Budgets met on Shop", Context: "sitepulse"}},
		{"budgets broken: failure, the description cut to GitHub's 140 characters", broken, &ExitCode{Code: 1},
			commitStatus{State: "failure", TargetURL: "https://sp.test/s", Context: "sitepulse",
				Description: cut("1 budget broken: LCP 8305 ms on /"+strings.Repeat("long-path/", 20)+" (mobile), over the maximum of 2500 ms", 140)}},
		{"a failed scan: error with its reason", unjudged, cannotJudge("%s", reason),
			commitStatus{State: "error", TargetURL: "https://sp.test/s", Description: "Could not judge: " + reason, Context: "sitepulse"}},
		{"no verdict at all: error", nil, cannotJudge("starting a scan: 403 Forbidden"),
			commitStatus{State: "error", TargetURL: "https://sp.test/s", Description: "Could not judge: starting a scan: 403 Forbidden", Context: "sitepulse"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statusOf(tt.v, tt.outcome, "https://sp.test/s")
			if got != tt.want {
				t.Fatalf("status\n got %+v\nwant %+v", got, tt.want)
			}
			if n := len([]rune(got.Description)); n > 140 {
				t.Errorf("description of %d characters", n)
			}
			if err := env.setStatus(t.Context(), http.DefaultClient, got); err != nil {
				t.Fatal(err)
			}
			req := g.Received()[i]
			var body map[string]any
			if err := json.Unmarshal(req.Body, &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"state": tt.want.State, "target_url": tt.want.TargetURL, "description": tt.want.Description, "context": "sitepulse"}
			if req.Method != "POST" || req.Path != "/repos/octo-org/octo-repo/statuses/"+sha || req.Header.Get("Authorization") != "Bearer ghs_token" ||
				req.Header.Get("Accept") != "application/vnd.github+json" || req.Header.Get("X-GitHub-Api-Version") != "2022-11-28" || !jsonEqual(body, want) {
				t.Errorf("GitHub got %s %s %v %s", req.Method, req.Path, req.Header, req.Body)
			}
		})
	}
	t.Run("GitHub's refusal is said", func(t *testing.T) {
		bad := env
		bad.token = "ghs_other"
		err := bad.setStatus(t.Context(), http.DefaultClient, statusOf(pass, nil, ""))
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Bad credentials") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an environment without a full commit id or repository sets none", func(t *testing.T) {
		for _, e := range []githubEnv{{token: "t", repo: "o/r", sha: "abc"}, {token: "t", repo: "o/r/x", sha: sha}, {repo: "o/r", sha: sha}} {
			if e.ready() {
				t.Errorf("%+v is ready", e)
			}
		}
	})
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
