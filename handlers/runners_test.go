package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// An owner makes a runner token on the workspace page: 303, the token shown once after the
// redirect; one click revokes it, and the runner holding it is refused at its next call.
func TestRunnerTokenShownOnceAndRevokedInOneClick(t *testing.T) {
	f := newUIFixture(t, 0, memory.New())
	ws := store.PersonalWorkspace(f.a.userID)
	resp, _ := f.a.postCSRF("/workspaces/"+ws+"/runners", url.Values{"name": {"staging office"}})
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	if strings.Contains(loc, "rnr_") {
		t.Fatalf("Location %q carries the token", loc)
	}
	_, body := f.a.get(loc)
	m := regexp.MustCompile(`readonly value="(rnr_[A-Za-z0-9_-]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page after the redirect shows no token:\n%s", body)
	}
	if _, again := f.a.get(loc); strings.Contains(again, m[1]) {
		t.Error("the token is shown again on reload")
	}
	contains(t, body, "staging office")
	tokens, err := f.ts.store.RunnerTokens(context.Background(), ws)
	if err != nil || len(tokens) != 1 || tokens[0].TokenHash != store.HashSecret(m[1]) {
		t.Fatalf("stored tokens %+v %v", tokens, err)
	}
	lease := func() int {
		req, _ := http.NewRequest("POST", f.a.base+"/api/runner/leases", strings.NewReader(`{"runner":"office"}`))
		req.Header.Set("Authorization", "Bearer "+m[1])
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := lease(); got != http.StatusNoContent {
		t.Fatalf("lease with the new token: %d, want 204 (nothing queued)", got)
	}
	resp, _ = f.a.postCSRF("/workspaces/"+ws+"/runners/"+tokens[0].ID+"/revoke", url.Values{})
	wantStatus(t, resp, http.StatusSeeOther)
	if got := lease(); got != http.StatusUnauthorized {
		t.Errorf("lease after the revocation: %d, want 401", got)
	}
}

// The protocol's refusals, each in the interface's error shape: a body that is not its JSON,
// a report that holds no Lighthouse result, a made-up lease, and a runner name that is not one.
func TestRunnerProtocolRefusals(t *testing.T) {
	f := newAPIFixture(t, memory.New())
	a := f.a
	report, err := os.ReadFile("../testdata/psi/home.mobile.json")
	must(t, err)
	var psi struct {
		LighthouseResult json.RawMessage `json:"lighthouseResult"`
	}
	must(t, json.Unmarshal(report, &psi))
	result := "/api/runner/leases/" + a.leaseID + "/result"
	for _, tt := range []struct {
		name, path, body string
		status           int
		validation       bool
	}{
		{"a lease request that is not JSON", "/api/runner/leases", `runner=x`, 400, false},
		{"a runner name with a control character", "/api/runner/leases", `{"runner":"a\u0007b"}`, 422, true},
		{"no runner name", "/api/runner/leases", `{"runner":""}`, 422, true},
		{"a result that is not JSON", result, `{`, 400, false},
		{"a result with neither report nor error", result, `{}`, 422, true},
		{"a report with no Lighthouse result", result, `{"report":{"categories":{}}}`, 422, true},
		{"a PSI answer instead of the report", result, string(report), 422, true},
		{"a heartbeat of a made-up lease", "/api/runner/leases/" + store.NewID() + "/heartbeat", `{}`, 410, false},
		{"a heartbeat of a lease id that is no id", "/api/runner/leases/x'--/heartbeat", `{}`, 410, false},
		{"the report for a made-up lease", "/api/runner/leases/" + store.NewID() + "/result", `{"report":` + string(psi.LighthouseResult) + `}`, 410, false},
		{"the report for its lease", result, `{"report":` + string(psi.LighthouseResult) + `}`, 200, false},
		{"the report again", result, `{"report":` + string(psi.LighthouseResult) + `}`, 410, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, "POST", tt.path, "application/json", tt.body, bearer(a.runnerToken))
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, body)
			}
			if tt.status == 200 {
				return
			}
			var shape map[string]json.RawMessage
			if json.Unmarshal([]byte(body), &shape) != nil || len(shape["error"]) == 0 {
				t.Fatalf("not the error shape: %s", body)
			}
			if tt.validation != strings.HasPrefix(string(shape["error"]), "{") {
				t.Errorf("error %s: validation shape %v", shape["error"], tt.validation)
			}
		})
	}
	// No token, a token of another kind, a made-up one: 401.
	for _, c := range []cred{{}, bearer(a.apiKey), bearer("rnr_made-up")} {
		if resp, body := f.do(t, "POST", "/api/runner/leases", "application/json", `{"runner":"x"}`, c); resp.StatusCode != 401 || !strings.Contains(body, `"error"`) {
			t.Errorf("%+v: %d %s, want 401", c, resp.StatusCode, body)
		}
	}
}
