package ci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// githubEnv is what GitHub Actions gives a step to set a commit status with: the job's token,
// the repository, the commit and the REST API's address (GITHUB_API_URL, so GitHub Enterprise
// Server works too).
type githubEnv struct {
	token, repo, sha, apiURL string
}

func githubFrom(getenv func(string) string) githubEnv {
	api := strings.TrimRight(getenv("GITHUB_API_URL"), "/")
	if api == "" {
		api = "https://api.github.com"
	}
	return githubEnv{token: getenv("GITHUB_TOKEN"), repo: getenv("GITHUB_REPOSITORY"), sha: getenv("GITHUB_SHA"), apiURL: api}
}

var (
	githubRepo = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	githubSHA  = regexp.MustCompile(`^[0-9a-fA-F]{40}([0-9a-fA-F]{24})?$`)
)

// ready says whether a status can be set: a token, an owner/repo and a full commit id.
func (g githubEnv) ready() bool {
	return g.token != "" && githubRepo.MatchString(g.repo) && githubSHA.MatchString(g.sha)
}

// commitStatus is the body of POST /repos/{owner}/{repo}/statuses/{sha}.
type commitStatus struct {
	State       string `json:"state"` // success, failure, error (or pending)
	TargetURL   string `json:"target_url,omitempty"`
	Description string `json:"description"`
	Context     string `json:"context"`
}

// statusContext names SitePulse's status among a commit's checks.
const statusContext = "sitepulse"

// maxStatusDescription is the longest description GitHub accepts.
const maxStatusDescription = 140

// statusOf is the commit status of an outcome: success when the budgets hold, failure when
// they are broken, error when the check could not judge, its description the verdict in brief.
func statusOf(v *checkVerdict, outcome error, scanURL string) commitStatus {
	st := commitStatus{State: "success", TargetURL: scanURL, Context: statusContext}
	switch {
	case v != nil && v.judged() && v.Pass:
		st.Description = "Budgets met on " + v.Site
	case v != nil && v.judged():
		st.State = "failure"
		var parts []string
		for _, x := range v.Violations {
			parts = append(parts, violationText(x.Metric, x.Operator, x.Threshold, x.Actual, x.PagePath, x.Strategy))
		}
		st.Description = fmt.Sprintf("%d budget%s broken: %s", len(v.Violations), pluralS(len(v.Violations)), strings.Join(parts, "; "))
	default:
		st.State = "error"
		reason := "could not judge"
		if outcome != nil {
			reason = outcome.Error()
		}
		st.Description = "Could not judge: " + reason
	}
	st.Description = cut(st.Description, maxStatusDescription)
	return st
}

// cut shortens s to at most n characters, ending with "…" when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// setStatus posts the commit status (GitHub REST API "Create a commit status"): 201 is success.
func (g githubEnv) setStatus(ctx context.Context, client *http.Client, st commitStatus) error {
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	owner, repo, _ := strings.Cut(g.repo, "/")
	u := g.apiURL + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/statuses/" + g.sha
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sitepulse-check")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusCreated {
		var e struct{ Message string }
		json.Unmarshal(raw, &e)
		return fmt.Errorf("GitHub answered %s: %s", resp.Status, e.Message)
	}
	return nil
}
