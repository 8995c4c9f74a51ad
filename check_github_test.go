package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// githubDouble is the GitHub REST API's "Create a commit status"
// (POST /repos/{owner}/{repo}/statuses/{sha}) as GitHub answers it: 201 with the status it
// made, 401 "Bad credentials" for a token it does not know, 404 "Not Found" for another
// repository, 422 "Validation Failed" for a state it does not know. It keeps every request.
type githubDouble struct {
	*httptest.Server
	token, repo string

	mu       sync.Mutex
	requests []githubRequest
}

type githubRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

func newGitHubDouble(t *testing.T, token, repo string) *githubDouble {
	g := &githubDouble{token: token, repo: repo}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.Close)
	return g
}

func (g *githubDouble) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.requests = append(g.requests, githubRequest{r.Method, r.URL.EscapedPath(), r.Header.Clone(), body})
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fail := func(status int, message string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"message": message,
			"documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status", "status": http.StatusText(status)})
	}
	if r.Header.Get("Authorization") != "Bearer "+g.token {
		fail(http.StatusUnauthorized, "Bad credentials")
		return
	}
	prefix := "/repos/" + g.repo + "/statuses/"
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, prefix) {
		fail(http.StatusNotFound, "Not Found")
		return
	}
	var st commitStatus
	if json.Unmarshal(body, &st) != nil || !map[string]bool{"error": true, "failure": true, "pending": true, "success": true}[st.State] {
		fail(http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"url": "https://api.github.com" + r.URL.Path, "id": 1, "node_id": "SC_test",
		"state": st.State, "description": st.Description, "target_url": st.TargetURL, "context": st.Context,
		"created_at": now, "updated_at": now, "creator": map[string]any{"login": "github-actions[bot]", "id": 41898282}})
}

func (g *githubDouble) received() []githubRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]githubRequest(nil), g.requests...)
}

// TestCommitStatus: the status of each outcome, and the request GitHub gets for it, exactly:
// the double refuses anything GitHub would.
func TestCommitStatus(t *testing.T) {
	const sha = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
	g := newGitHubDouble(t, "ghs_token", "octo-org/octo-repo")
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
		{"budgets broken: failure, the description cut to GitHub's 140 characters", broken, &exitCode{code: 1},
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
			req := g.received()[i]
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
