// Package citest holds the doubles of the third parties the CI client talks to: GitHub's
// commit status API, with its real answers.
package citest

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

// GitHub is the GitHub REST API's "Create a commit status"
// (POST /repos/{owner}/{repo}/statuses/{sha}) as GitHub answers it: 201 with the status it
// made, 401 "Bad credentials" for a token it does not know, 404 "Not Found" for another
// repository, 422 "Validation Failed" for a state it does not know. It keeps every request.
type GitHub struct {
	*httptest.Server
	token, repo string

	mu       sync.Mutex
	requests []GitHubRequest
}

// GitHubRequest is a request the double received.
type GitHubRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// NewGitHub starts the double for token and repository repo ("owner/name"), closed when t ends.
func NewGitHub(t testing.TB, token, repo string) *GitHub {
	g := &GitHub{token: token, repo: repo}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.Close)
	return g
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.requests = append(g.requests, GitHubRequest{r.Method, r.URL.EscapedPath(), r.Header.Clone(), body})
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
	var st struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
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

// Received is every request the double got, in order.
func (g *GitHub) Received() []GitHubRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GitHubRequest(nil), g.requests...)
}
