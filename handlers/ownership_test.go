package handlers

import (
	"context"
	"errors"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// ownershipCase is one route walked by user B with B's own valid credential on user A's ids.
// To cover a new route, add a line to ownershipCases: build the path and body
// from A's ids, pick B's credential, and say the status B must get (404 for a thing of A's,
// 200 for a list of B's own). Every response is searched for A's data, and the optional intact
// check proves a refused write changed nothing.
type ownershipCase struct {
	name string
	// route is the pattern as registered in routes.go; TestOwnershipCoversRoutes checks every
	// route with an id in its path has a case.
	route  string
	method string
	path   func(a, b apiAccount) string
	// form is a url-encoded body; cookie-authenticated POSTs get B's CSRF token added.
	form url.Values
	// json is a JSON body, built from A's ids.
	json   func(a apiAccount) string
	cred   func(b apiAccount) cred
	status int
	intact func(t *testing.T, f *apiFixture)
}

func asBearer(b apiAccount) cred { return bearer(b.apiKey) }
func asCookie(b apiAccount) cred { return cookie(b.session) }
func asRunner(b apiAccount) cred { return bearer(b.runnerToken) }

// runnerIntact checks A's runner still holds its lease and token, and A's site names no
// locations.
func runnerIntact(t *testing.T, f *apiFixture) {
	ctx := context.Background()
	tok, err := f.st.RunnerTokenByHash(ctx, store.HashSecret(f.a.runnerToken))
	if err != nil {
		t.Fatalf("A's runner token after B's request: %v", err)
	}
	if err := f.st.ExtendRunnerLease(ctx, tok, f.a.leaseID, f.now, f.now.Add(time.Hour)); err != nil {
		t.Errorf("A's runner lost its lease after B's request: %v", err)
	}
	if locs, err := f.st.SiteLocations(ctx, f.a.siteID); err != nil || locs != nil {
		t.Errorf("A's site's locations after B's request: %v %v", locs, err)
	}
}

var ownershipCases = []ownershipCase{
	// Runners (docs/runners.md): B's runner sees nothing of A's queued audit, and cannot keep
	// or finish A's runner's lease; B's session cannot make, revoke or place A's runners.
	{name: "B's runner leasing (A's audit waits)", route: "POST /api/runner/leases", method: "POST", path: fixed("/api/runner/leases"),
		json: func(apiAccount) string { return `{"runner":"b","location":""}` }, cred: asRunner, status: 204, intact: runnerIntact},
	{name: "heartbeat of A's runner's lease", route: "POST /api/runner/leases/{leaseId}/heartbeat", method: "POST",
		path: func(a, _ apiAccount) string { return "/api/runner/leases/" + a.leaseID + "/heartbeat" }, json: func(apiAccount) string { return `{}` },
		cred: asRunner, status: 410, intact: runnerIntact},
	{name: "result for A's runner's lease", route: "POST /api/runner/leases/{leaseId}/result", method: "POST",
		path: func(a, _ apiAccount) string { return "/api/runner/leases/" + a.leaseID + "/result" }, json: func(apiAccount) string { return `{"error":"B was here"}` },
		cred: asRunner, status: 410, intact: runnerIntact},
	{name: "B's runner token revoking itself", route: "POST /api/runner/revoke", method: "POST", path: fixed("/api/runner/revoke"),
		json: func(apiAccount) string { return `{}` }, cred: asRunner, status: 200, intact: runnerIntact},
	{name: "making a runner token of A's workspace", route: "POST /workspaces/{workspaceId}/runners", method: "POST", path: wsPath("/runners"),
		form: url.Values{"name": {"B's"}}, cred: asCookie, status: 404, intact: runnerIntact},
	{name: "revoking A's runner token", route: "POST /workspaces/{workspaceId}/runners/{tokenId}/revoke", method: "POST",
		path: func(a, _ apiAccount) string {
			return "/workspaces/" + a.userID + "/runners/" + a.runnerTokenID + "/revoke"
		}, form: url.Values{},
		cred: asCookie, status: 404, intact: runnerIntact},
	{name: "revoking A's runner token from B's workspace", route: "POST /workspaces/{workspaceId}/runners/{tokenId}/revoke", method: "POST",
		path: func(a, b apiAccount) string {
			return "/workspaces/" + b.userID + "/runners/" + a.runnerTokenID + "/revoke"
		}, form: url.Values{},
		cred: asCookie, status: 404, intact: runnerIntact},
	{name: "A's site's runner locations", route: "POST /sites/{siteId}/locations", method: "POST", path: func(a, _ apiAccount) string { return "/sites/" + a.siteID + "/locations" },
		form: url.Values{"locations": {"b-lan"}}, cred: asCookie, status: 404, intact: runnerIntact},
	// Budget check (API key).
	{name: "budget-check of A's site", route: "POST /api/external/budget-check", method: "POST", path: fixed("/api/external/budget-check"),
		json: func(a apiAccount) string { return `{"siteId":"` + a.siteID + `"}` }, cred: asBearer, status: 404},
	{name: "budget-check of A's site with an upper-case id", route: "POST /api/external/budget-check", method: "POST", path: fixed("/api/external/budget-check"),
		json: func(a apiAccount) string { return `{"siteId":"` + strings.ToUpper(a.siteID) + `"}` }, cred: asBearer, status: 404},

	{name: "budget-check of A's scan of A's site, waiting, as Markdown", route: "POST /api/external/budget-check", method: "POST", path: fixed("/api/external/budget-check?format=markdown"),
		json: func(a apiAccount) string {
			return `{"siteId":"` + a.siteID + `","scanId":"` + a.scanID + `","waitSeconds":5}`
		}, cred: asBearer, status: 404},

	// CI scans (API key allowed to start scans).
	{name: "starting a scan of A's site", route: "POST /api/external/scans", method: "POST", path: fixed("/api/external/scans"),
		json: func(a apiAccount) string { return `{"siteId":"` + a.siteID + `","commit":"abcdef1"}` }, cred: asBearer, status: 404,
		intact: func(t *testing.T, f *apiFixture) {
			scans, _ := f.st.ScansOf(context.Background(), f.a.userID, f.a.siteID, 1)
			pubs, _ := f.st.Publishes(context.Background(), f.a.userID, f.a.siteID, time.Time{}, 100)
			if len(scans) > 0 && scans[0].InFlight() || slices.ContainsFunc(pubs, func(p store.Publish) bool { return p.Commit != "" }) {
				t.Errorf("B started a scan of A's site or recorded a deploy: %+v %+v", scans, pubs)
			}
		}},
	{name: "following A's scan", route: "GET /api/external/scans/{scanId}", method: "GET", path: func(a, _ apiAccount) string { return "/api/external/scans/" + a.scanID },
		cred: asBearer, status: 404},

	// Export (session cookie).
	{name: "CSV export of A's site", route: exportRoute, method: "GET", path: func(a, _ apiAccount) string { return "/api/sites/" + a.siteID + "/export" }, cred: asCookie, status: 404},
	{name: "JSON export of A's site", route: exportRoute, method: "GET", path: func(a, _ apiAccount) string { return "/api/sites/" + a.siteID + "/export?format=json" }, cred: asCookie, status: 404},
	{name: "export of A's scan of A's site", route: exportRoute, method: "GET", path: func(a, _ apiAccount) string {
		return "/api/sites/" + a.siteID + "/export?scanId=" + a.scanID
	}, cred: asCookie, status: 404},
	{name: "export of A's scan through B's own site", route: exportRoute, method: "GET", path: func(a, b apiAccount) string {
		return "/api/sites/" + b.siteID + "/export?format=json&scanId=" + a.scanID
	}, cred: asCookie, status: 404},

	// Settings routes that take ids.
	{name: "revoking A's API key", route: "POST /settings/api-keys/{keyID}/revoke", method: "POST", path: func(a, _ apiAccount) string { return "/settings/api-keys/" + a.apiKeyID + "/revoke" },
		form: url.Values{}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
			if _, err := f.st.APIKeyByHash(context.Background(), store.HashSecret(f.a.apiKey), f.now); err != nil {
				t.Errorf("A's key stopped working: %v", err)
			}
		}},
	{name: "disconnecting A's OAuth app", route: "POST /settings/connected-apps/{clientID}/revoke", method: "POST", path: func(a, _ apiAccount) string { return "/settings/connected-apps/" + a.clientID + "/revoke" },
		form: url.Values{}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
			apps, _ := f.st.Consents(context.Background(), f.a.userID)
			if len(apps) != 1 || apps[0].ClientID != f.a.clientID {
				t.Errorf("A's connected apps = %+v", apps)
			}
			if tok, err := f.st.Token(context.Background(), store.HashSecret(f.a.accessToken)); err != nil || tok.RevokedAt != nil {
				t.Errorf("A's access token was revoked: %+v %v", tok, err)
			}
		}},
	{name: "the settings page lists only B's keys and apps", route: "GET /settings", method: "GET", path: fixed("/settings"), cred: asCookie, status: 200},

	// Web UI: pages and forms on A's site, scans, rules and reports.
	{name: "the sites list shows only B's sites", route: "GET /{$}", method: "GET", path: fixed("/"), cred: asCookie, status: 200},
	{name: "A's site page", route: "GET /sites/{siteId}", method: "GET", path: sitePath(""), cred: asCookie, status: 404},
	{name: "the edit form of A's site", route: "GET /sites/{siteId}/edit", method: "GET", path: sitePath("/edit"), cred: asCookie, status: 404},
	{name: "changing A's site", route: "POST /sites/{siteId}", method: "POST", path: sitePath(""),
		form: url.Values{"name": {"Taken"}, "domain": {"evil.example"}}, cred: asCookie, status: 404, intact: siteIntact},
	{name: "setting the sign-in of A's site", route: "POST /sites/{siteId}/access", method: "POST", path: sitePath("/access"),
		form: url.Values{"kind": {"cookies"}, "cookies": {"session=b-planted"}}, cred: asCookie, status: 404, intact: accessIntact},
	{name: "removing the sign-in of A's site", route: "POST /sites/{siteId}/access", method: "POST", path: sitePath("/access"),
		form: url.Values{"kind": {"none"}}, cred: asCookie, status: 404, intact: accessIntact},
	{name: "adding the beacon to A's site on the platform", route: "POST /sites/{siteId}/beacon/install", method: "POST", path: sitePath("/beacon/install"),
		form: url.Values{}, cred: asCookie, status: 404, intact: scriptIntact},
	{name: "removing the beacon from A's site on the platform", route: "POST /sites/{siteId}/beacon/remove", method: "POST", path: sitePath("/beacon/remove"),
		form: url.Values{}, cred: asCookie, status: 404, intact: scriptIntact},
	{name: "deleting A's site", route: "POST /sites/{siteId}/delete", method: "POST", path: sitePath("/delete"),
		form: url.Values{"confirm": {"yes"}}, cred: asCookie, status: 404, intact: siteIntact},
	{name: "Scan now on A's site", route: "POST /sites/{siteId}/scan", method: "POST", path: sitePath("/scan"),
		form: url.Values{}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
			scans, _ := f.st.ScansOf(context.Background(), f.a.userID, f.a.siteID, 10)
			for _, sc := range scans {
				if sc.Status == store.StatusQueued || sc.Status == store.StatusRunning {
					t.Errorf("B queued a scan of A's site: %+v", sc)
				}
			}
		}},
	{name: "A's scan page", route: "GET /sites/{siteId}/scans/{scanId}", method: "GET", path: scanPath(""), cred: asCookie, status: 404},
	{name: "A's scan page through B's own site", route: "GET /sites/{siteId}/scans/{scanId}", method: "GET", path: func(a, b apiAccount) string {
		return "/sites/" + b.siteID + "/scans/" + a.scanID
	}, cred: asCookie, status: 404},
	{name: "sharing a report of A's scan", route: "POST /sites/{siteId}/scans/{scanId}/reports", method: "POST", path: scanPath("/reports"),
		form: url.Values{"expires": {"7"}}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
			if reps, _ := f.st.ReportsOf(context.Background(), f.a.userID); len(reps) != 1 {
				t.Errorf("A's account holds %d reports after B's try, want the fixture's 1", len(reps))
			}
		}},
	{name: "the progress stream of A's scan", route: "GET /sites/{siteId}/scans/{scanId}/events", method: "GET", path: scanPath("/events"), cred: asCookie, status: 404},
	{name: "a page of A's scan", route: "GET /sites/{siteId}/scans/{scanId}/page", method: "GET", path: scanPath("/page?path=%2F&strategy=mobile"), cred: asCookie, status: 404},
	{name: "a screenshot of A's scan", route: "GET /sites/{siteId}/scans/{scanId}/images/{index}", method: "GET", path: scanPath("/images/0?path=%2F&strategy=mobile"), cred: asCookie, status: 404},
	{name: "a screenshot of A's scan through B's own site", route: "GET /sites/{siteId}/scans/{scanId}/images/{index}", method: "GET", path: func(a, b apiAccount) string {
		return "/sites/" + b.siteID + "/scans/" + a.scanID + "/images/0?path=%2F&strategy=mobile"
	}, cred: asCookie, status: 404},
	{name: "comparing A's scans", route: "GET /sites/{siteId}/compare", method: "GET", path: func(a, _ apiAccount) string {
		return "/sites/" + a.siteID + "/compare?from=" + a.prevScanID + "&to=" + a.scanID
	}, cred: asCookie, status: 404},
	{name: "comparing A's scans through B's own site", route: "GET /sites/{siteId}/compare", method: "GET", path: func(a, b apiAccount) string {
		return "/sites/" + b.siteID + "/compare?from=" + a.prevScanID + "&to=" + a.scanID + "&page=%2F&strategy=mobile"
	}, cred: asCookie, status: 404},
	{name: "A's budgets", route: "GET /sites/{siteId}/budgets", method: "GET", path: sitePath("/budgets"), cred: asCookie, status: 404},
	{name: "changing A's budgets", route: "POST /sites/{siteId}/budgets", method: "POST", path: sitePath("/budgets"),
		form: url.Values{"budget_performance": {"1"}}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
			if b, _ := f.st.Budgets(context.Background(), f.a.userID, f.a.siteID); b["performance"].Threshold == 1 {
				t.Errorf("B changed A's budgets: %v", b)
			}
		}},
	{name: "adding an alert rule to A's site", route: "POST /sites/{siteId}/alert-rules", method: "POST", path: sitePath("/alert-rules"),
		form: url.Values{"metric": {"cls"}, "operator": {"max"}, "threshold": {"0.5"}}, cred: asCookie, status: 404, intact: rulesIntact},
	{name: "deleting A's alert rule", route: "POST /sites/{siteId}/alert-rules/{ruleId}/delete", method: "POST", path: func(a, _ apiAccount) string {
		return "/sites/" + a.siteID + "/alert-rules/" + a.ruleID + "/delete"
	}, form: url.Values{}, cred: asCookie, status: 404, intact: rulesIntact},
	{name: "deleting A's alert rule through B's own site", route: "POST /sites/{siteId}/alert-rules/{ruleId}/delete", method: "POST", path: func(a, b apiAccount) string {
		return "/sites/" + b.siteID + "/alert-rules/" + a.ruleID + "/delete"
	}, form: url.Values{}, cred: asCookie, status: 404, intact: rulesIntact},
	{name: "the reports list shows only B's reports", route: "GET /reports", method: "GET", path: fixed("/reports"), cred: asCookie, status: 200},
	{name: "revoking A's client report", route: "POST /reports/{reportId}/revoke", method: "POST", path: func(a, _ apiAccount) string {
		return "/reports/" + a.reportID + "/revoke"
	}, form: url.Values{}, cred: asCookie, status: 404, intact: func(t *testing.T, f *apiFixture) {
		reports, _ := f.st.ReportsOf(context.Background(), f.a.userID)
		if len(reports) != 1 || reports[0].RevokedAt != nil {
			t.Errorf("A's reports = %+v", reports)
		}
	}},
	// The public report is reached by its secret token, never by an id: a guessed one is unknown.
	{name: "a report link that was never issued", route: "GET /report/{token}", method: "GET", path: func(a, _ apiAccount) string { return "/report/" + a.reportID }, cred: asCookie, status: 404},
	{name: "a screenshot by a report link that was never issued", route: "GET /report/{token}/images/{index}", method: "GET", path: func(a, _ apiAccount) string {
		return "/report/" + a.reportID + "/images/0?path=%2F&strategy=mobile"
	}, cred: asCookie, status: 404},

	// The beacon's ingest is keyed by a site's public beacon id, never its site id: a site id
	// (or anything else of A's) names no site there.
	{name: "a beacon sent to A's site id", route: "POST /api/beacon/{publicId}", method: "POST", path: func(a, _ apiAccount) string {
		return "/api/beacon/" + a.siteID
	}, json: func(apiAccount) string { return `{}` }, cred: asCookie, status: 404},

	// Workspaces: A's personal workspace has A's user id; B is no member of it.
	{name: "A's workspace page", route: "GET /workspaces/{workspaceId}", method: "GET", path: wsPath(""), cred: asCookie, status: 404},
	{name: "inviting into A's workspace", route: "POST /workspaces/{workspaceId}/invitations", method: "POST", path: wsPath("/invitations"),
		form: url.Values{"email": {"b2@example.com"}, "role": {"owner"}}, cred: asCookie, status: 404, intact: membersIntact},
	{name: "revoking an invitation of A's workspace", route: "POST /workspaces/{workspaceId}/invitations/{invitationId}/revoke", method: "POST",
		path: func(a, _ apiAccount) string {
			return "/workspaces/" + a.userID + "/invitations/" + a.reportID + "/revoke"
		}, form: url.Values{}, cred: asCookie, status: 404},
	{name: "changing a role in A's workspace", route: "POST /workspaces/{workspaceId}/members/{userId}", method: "POST",
		path: func(a, _ apiAccount) string { return "/workspaces/" + a.userID + "/members/" + a.userID }, form: url.Values{"role": {"viewer"}}, cred: asCookie, status: 404, intact: membersIntact},
	{name: "removing A from A's workspace", route: "POST /workspaces/{workspaceId}/members/{userId}/remove", method: "POST",
		path: func(a, _ apiAccount) string { return "/workspaces/" + a.userID + "/members/" + a.userID + "/remove" }, form: url.Values{}, cred: asCookie, status: 404, intact: membersIntact},
	{name: "leaving A's workspace", route: "POST /workspaces/{workspaceId}/leave", method: "POST", path: wsPath("/leave"), form: url.Values{}, cred: asCookie, status: 404, intact: membersIntact},
	{name: "deleting A's workspace", route: "POST /workspaces/{workspaceId}/delete", method: "POST", path: wsPath("/delete"), form: url.Values{"name": {"A"}}, cred: asCookie, status: 404, intact: membersIntact},
	// Alert channels are the workspace's: B sees nothing of A's, can add none, test none, delete none.
	{name: "A's workspace Notifications page", route: "GET /workspaces/{workspaceId}/notifications", method: "GET", path: wsPath("/notifications"), cred: asCookie, status: 404},
	{name: "adding a channel to A's workspace", route: "POST /workspaces/{workspaceId}/channels", method: "POST", path: wsPath("/channels"),
		form: url.Values{"name": {"x"}, "kind": {"email"}, "events": {"scan.failed"}}, cred: asCookie, status: 404, intact: channelsIntact},
	{name: "testing A's alert channel", route: "POST /workspaces/{workspaceId}/channels/{channelId}/test", method: "POST",
		path: func(a, _ apiAccount) string { return "/workspaces/" + a.userID + "/channels/" + a.channelID + "/test" }, form: url.Values{}, cred: asCookie, status: 404, intact: channelsIntact},
	{name: "testing A's alert channel through B's own workspace", route: "POST /workspaces/{workspaceId}/channels/{channelId}/test", method: "POST",
		path: func(a, b apiAccount) string { return "/workspaces/" + b.userID + "/channels/" + a.channelID + "/test" }, form: url.Values{}, cred: asCookie, status: 404, intact: channelsIntact},
	{name: "deleting A's alert channel", route: "POST /workspaces/{workspaceId}/channels/{channelId}/delete", method: "POST",
		path: func(a, _ apiAccount) string {
			return "/workspaces/" + a.userID + "/channels/" + a.channelID + "/delete"
		}, form: url.Values{}, cred: asCookie, status: 404, intact: channelsIntact},
	{name: "deleting A's alert channel through B's own workspace", route: "POST /workspaces/{workspaceId}/channels/{channelId}/delete", method: "POST",
		path: func(a, b apiAccount) string {
			return "/workspaces/" + b.userID + "/channels/" + a.channelID + "/delete"
		}, form: url.Values{}, cred: asCookie, status: 404, intact: channelsIntact},
	{name: "A's workspace notifications", route: "POST /workspaces/{workspaceId}/notifications", method: "POST", path: wsPath("/notifications"), form: url.Values{}, cred: asCookie, status: 404, intact: membersIntact},
	{name: "A's audit log", route: "GET /workspaces/{workspaceId}/audit-log", method: "GET", path: wsPath("/audit-log"), cred: asCookie, status: 404},
	{name: "A's audit log, a later page", route: "GET /workspaces/{workspaceId}/audit-log", method: "GET", path: wsPath("/audit-log?after=9999999999999999.99&kind=auth."), cred: asCookie, status: 404},
	{name: "A's audit log as CSV", route: "GET /workspaces/{workspaceId}/audit-log/export", method: "GET", path: wsPath("/audit-log/export?format=csv"), cred: asCookie, status: 404},
	{name: "A's audit log as JSON Lines", route: "GET /workspaces/{workspaceId}/audit-log/export", method: "GET", path: wsPath("/audit-log/export?format=jsonl&kind=auth.signin"), cred: asCookie, status: 404},
	{name: "A's workspace retention", route: "POST /workspaces/{workspaceId}/retention", method: "POST", path: wsPath("/retention"), form: url.Values{"retention_days": {"1"}}, cred: asCookie, status: 404, intact: retentionIntact},
	{name: "A's workspace single sign-on page", route: "GET /workspaces/{workspaceId}/sso", method: "GET", path: wsPath("/sso"), cred: asCookie, status: 404},
	{name: "setting A's SSO domain", route: "POST /workspaces/{workspaceId}/sso/domain", method: "POST", path: wsPath("/sso/domain"), form: url.Values{"domain": {"evil.example"}}, cred: asCookie, status: 404, intact: ssoIntact},
	{name: "verifying A's SSO domain", route: "POST /workspaces/{workspaceId}/sso/verify", method: "POST", path: wsPath("/sso/verify"), form: url.Values{}, cred: asCookie, status: 404, intact: ssoIntact},
	{name: "setting A's workspace provider", route: "POST /workspaces/{workspaceId}/sso/provider", method: "POST", path: wsPath("/sso/provider"),
		form: url.Values{"issuer": {"https://evil.example"}, "client_id": {"x"}, "client_secret": {"y"}}, cred: asCookie, status: 404, intact: providerIntact},
	// A's workspace has no provider here; B removing a provider A has: sso_workspace_test.go
	// (TestSSORequiredThroughWorkspaceProvider).
	{name: "removing A's workspace provider", route: "POST /workspaces/{workspaceId}/sso/provider/delete", method: "POST", path: wsPath("/sso/provider/delete"), form: url.Values{}, cred: asCookie, status: 404, intact: providerIntact},
	{name: "signing in with A's workspace provider (it has none)", route: "GET /login/sso/w/{workspaceId}", method: "GET", path: func(a, _ apiAccount) string { return "/login/sso/w/" + a.userID }, cred: asCookie, status: 404},
	{name: "requiring SSO in A's workspace", route: "POST /workspaces/{workspaceId}/sso/require", method: "POST", path: wsPath("/sso/require"), form: url.Values{"required": {"on"}, "jit_role": {"editor"}}, cred: asCookie, status: 404, intact: ssoIntact},
	// Invitations are reached by their secret token: a guessed one is unknown.
	{name: "a sign-up link that was never sealed", route: "GET /signup/confirm/{token}", method: "GET", path: func(a, _ apiAccount) string { return "/signup/confirm/" + a.userID }, cred: asCookie, status: 400},
	{name: "choosing a password with a sign-up link that was never sealed", route: "POST /signup/confirm/{token}", method: "POST", path: func(a, _ apiAccount) string { return "/signup/confirm/" + a.userID },
		form: url.Values{"password": {"a fine new password"}}, cred: asCookie, status: 400},
	{name: "a reset link that was never issued", route: "GET /password/reset/{token}", method: "GET", path: func(a, _ apiAccount) string { return "/password/reset/rst_" + a.userID }, cred: asCookie, status: 404},
	{name: "resetting with a link that was never issued", route: "POST /password/reset/{token}", method: "POST", path: func(a, _ apiAccount) string { return "/password/reset/rst_" + a.userID },
		form: url.Values{"password": {"a fine new password"}}, cred: asCookie, status: 404},
	{name: "an e-mail change link that was never issued", route: "GET /email/confirm/{token}", method: "GET", path: func(a, _ apiAccount) string { return "/email/confirm/eml_" + a.userID }, cred: asCookie, status: 404},
	{name: "confirming an e-mail change that was never issued", route: "POST /email/confirm/{token}", method: "POST", path: func(a, _ apiAccount) string { return "/email/confirm/eml_" + a.userID },
		form: url.Values{}, cred: asCookie, status: 404},
	{name: "an invitation link that was never issued", route: "GET /invite/{token}", method: "GET", path: func(a, _ apiAccount) string { return "/invite/inv_" + a.reportID }, cred: asCookie, status: 404},
	{name: "accepting an invitation that was never issued", route: "POST /invite/{token}", method: "POST", path: func(a, _ apiAccount) string { return "/invite/inv_" + a.userID }, form: url.Values{}, cred: asCookie, status: 404},

	// MCP (ids in the JSON-RPC body): B's key gets the tool error, never A's data.
	{name: "MCP get_latest_scan of A's site", route: "POST /api/mcp", method: "POST", path: fixed("/api/mcp"),
		json: mcpCall("get_latest_scan", "siteId", func(a apiAccount) string { return a.siteID }), cred: asBearer, status: 200},
	{name: "MCP get_page_details of A's scan", route: "POST /api/mcp", method: "POST", path: fixed("/api/mcp"),
		json: mcpCall("get_page_details", "scanId", func(a apiAccount) string { return a.scanID }), cred: asBearer, status: 200},
	{name: "MCP generate_client_report of A's scan", route: "POST /api/mcp", method: "POST", path: fixed("/api/mcp"),
		json: mcpCall("generate_client_report", "scanId", func(a apiAccount) string { return a.scanID }), cred: asBearer, status: 200},
}

func sitePath(suffix string) func(a, b apiAccount) string {
	return func(a, _ apiAccount) string { return "/sites/" + a.siteID + suffix }
}

func scanPath(suffix string) func(a, b apiAccount) string {
	return func(a, _ apiAccount) string { return "/sites/" + a.siteID + "/scans/" + a.scanID + suffix }
}

func mcpCall(tool, arg string, id func(a apiAccount) string) func(a apiAccount) string {
	return func(a apiAccount) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"` + arg + `":"` + id(a) + `"}}}`
	}
}

func wsPath(suffix string) func(a, b apiAccount) string {
	return func(a, _ apiAccount) string { return "/workspaces/" + a.userID + suffix }
}

// accessIntact: A's site is audited signed out, as the fixture left it.
func accessIntact(t *testing.T, f *apiFixture) {
	if a, err := f.st.SiteAccessForScan(context.Background(), f.a.siteID); err != nil || a.Kind != store.AccessNone {
		t.Errorf("A's site access = %+v, %v", a, err)
	}
}

// membersIntact: A's personal workspace still has A alone, as owner, and no invitation.
func membersIntact(t *testing.T, f *apiFixture) {
	ms, _ := f.st.Members(context.Background(), f.a.userID)
	if len(ms) != 1 || ms[0].UserID != f.a.userID || ms[0].Role != store.RoleOwner || !ms[0].NotifyRegressions {
		t.Errorf("A's workspace members after B's request: %+v", ms)
	}
	if inv, _ := f.st.Invitations(context.Background(), f.a.userID, f.now); len(inv) != 0 {
		t.Errorf("B invited into A's workspace: %+v", inv)
	}
}

// channelsIntact: A's workspace still has A's one channel, with no delivery.
func channelsIntact(t *testing.T, f *apiFixture) {
	chs, _ := f.st.WorkspaceChannels(context.Background(), f.a.userID)
	if len(chs) != 1 || chs[0].ID != f.a.channelID {
		t.Errorf("A's channels after B's request: %+v", chs)
	}
	if d, err := f.st.DeliveriesOf(context.Background(), f.a.userID, f.a.userID, f.a.channelID, 50); err != nil || len(d) != 0 {
		t.Errorf("A's channel got deliveries: %v %v", d, err)
	}
}

// scriptIntact: A's site records no script B applied or removed.
func scriptIntact(t *testing.T, f *apiFixture) {
	s, err := f.st.Site(context.Background(), f.a.userID, f.a.siteID)
	if err != nil || s.PlatformScript != nil {
		t.Errorf("A's site's platform script after B's request: %+v %v", s.PlatformScript, err)
	}
}

func siteIntact(t *testing.T, f *apiFixture) {
	s, err := f.st.Site(context.Background(), f.a.userID, f.a.siteID)
	if err != nil || s.Name != f.a.siteName {
		t.Errorf("A's site after B's request: %+v %v", s, err)
	}
}

func rulesIntact(t *testing.T, f *apiFixture) {
	rules, _ := f.st.AlertRules(context.Background(), f.a.userID, f.a.siteID)
	found := false
	for _, r := range rules {
		found = found || r.ID == f.a.ruleID
		if r.Metric == "cls" {
			t.Errorf("B added a rule to A's site: %+v", r)
		}
	}
	if !found {
		t.Errorf("A's alert rule is gone: %+v", rules)
	}
}

const exportRoute = "GET /api/sites/{siteId}/export"

// TestOwnershipCoversRoutes fails when routes.go registers a route with an id in its path that
// no ownership case walks (every route that takes an id must be walked by a second user).
func TestOwnershipCoversRoutes(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	must(t, err)
	covered := map[string]bool{}
	for _, c := range ownershipCases {
		covered[c.route] = true
	}
	// A path wildcard such as {siteId}; {$} only anchors the path and takes no id.
	routes := regexp.MustCompile(`mux\.Handle\("([A-Z]+ [^"]*\{[A-Za-z][^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) == 0 {
		t.Fatal("found no routes with ids in routes.go")
	}
	for _, m := range routes {
		if !covered[m[1]] {
			t.Errorf("route %q takes an id but has no case in ownershipCases", m[1])
		}
	}
}

func fixed(path string) func(a, b apiAccount) string {
	return func(apiAccount, apiAccount) string { return path }
}

// TestOwnership: user B never reads, exports or changes user A's data through any route.
func TestOwnership(t *testing.T) {
	for _, backend := range storetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			f := newAPIFixture(t, backend.Open(t))
			a, b := f.a, f.b
			// What of A's must never appear in a response to B.
			secrets := []string{a.siteName, demo.Domain, a.siteID, a.scanID, a.apiKey[:12], a.apiKeyID, a.clientID}
			for _, tt := range ownershipCases {
				t.Run(tt.name, func(t *testing.T) {
					var ct, body string
					switch {
					case tt.json != nil:
						ct, body = "application/json", tt.json(a)
					case tt.form != nil:
						form := url.Values{}
						for k, v := range tt.form {
							form[k] = v
						}
						form.Set("csrf_token", b.csrf)
						ct, body = "application/x-www-form-urlencoded", form.Encode()
					}
					resp, got := f.do(t, tt.method, tt.path(a, b), ct, body, tt.cred(b))
					if resp.StatusCode != tt.status {
						t.Errorf("status %d, want %d: %.300s", resp.StatusCode, tt.status, got)
					}
					for _, s := range secrets {
						if strings.Contains(got, s) {
							t.Errorf("response to B contains A's %q", s)
						}
					}
					if cd := resp.Header.Get("Content-Disposition"); cd != "" {
						t.Errorf("B got a download: %s", cd)
					}
					if tt.intact != nil {
						tt.intact(t, f)
					}
				})
			}
			// A's own credentials still reach A's data after B's walk.
			resp, _ := f.do(t, "POST", "/api/external/budget-check", "application/json", `{"siteId":"`+a.siteID+`"}`, bearer(a.apiKey))
			if resp.StatusCode != 200 {
				t.Errorf("A's budget-check after B's walk: %d", resp.StatusCode)
			}
		})
	}
}

func retentionIntact(t *testing.T, f *apiFixture) {
	w, err := f.st.Workspace(context.Background(), f.a.userID, f.a.userID)
	if err != nil || w.RetentionDays != store.DefaultRetentionDays {
		t.Errorf("A's workspace retention after B's request: %d %v", w.RetentionDays, err)
	}
}

func ssoIntact(t *testing.T, f *apiFixture) {
	r, err := f.st.SSORule(context.Background(), f.a.userID)
	if err != nil || r.Domain != "" || r.RequiredAt != nil || r.JITRole != "" {
		t.Errorf("A's single sign-on rule after B's request: %+v %v", r, err)
	}
}

func providerIntact(t *testing.T, f *apiFixture) {
	if p, err := f.st.WorkspaceProviderOf(context.Background(), f.a.userID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("A's workspace provider after B's request: %+v %v", p, err)
	}
}
