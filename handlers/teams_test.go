package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

var inviteLinkRe = regexp.MustCompile(`http://sitepulse\.test/invite/(inv_[A-Za-z0-9_-]+)`)

// The whole team story through the browser: the owner makes a workspace with a site, invites
// an editor and a viewer by link; the viewer reads the site and exports it but is refused Scan
// now and budget edits (403, nothing changed); the owner removes the editor, whose next page
// load, progress stream and MCP call are refused, and whose used link grants nothing again.
func TestTeamEndToEnd(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			ts := newTestServer(t, st)
			ctx := context.Background()

			own := ts.browser(t)
			own.signup("owner@example.com")
			resp, _ := own.post("/workspaces", url.Values{"csrf_token": {own.csrf}, "name": {"Acme agency"}})
			wantStatus(t, resp, http.StatusSeeOther)
			wsPath := strings.TrimSuffix(resp.Header.Get("Location"), "?done=created")
			ws := strings.TrimPrefix(wsPath, "/workspaces/")
			resp, _ = own.post("/sites", url.Values{"csrf_token": {own.csrf}, "workspace": {ws}, "name": {"Acme shop"}, "domain": {"shop.acme.test"}})
			wantStatus(t, resp, http.StatusSeeOther)
			sitePath, _, _ := strings.Cut(resp.Header.Get("Location"), "?")
			siteID := strings.TrimPrefix(sitePath, "/sites/")
			scanID := completeScan(t, st, siteID, ts.now)

			invite := func(email, role string) string {
				t.Helper()
				resp, body := own.postFollow(wsPath+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {email}, "role": {role}})
				wantStatus(t, resp, http.StatusOK)
				m := inviteLinkRe.FindStringSubmatch(body)
				if m == nil {
					t.Fatalf("no invitation link shown: %.400s", body)
				}
				// With SMTP set the link is e-mailed too.
				if sent := outboxFor(st).next(t, email); !strings.Contains(sent.body, m[0]) {
					t.Errorf("the invitation e-mail lacks the link: %q", sent.body)
				}
				return "/invite/" + m[1]
			}
			join := func(email, link string) *browser {
				t.Helper()
				br := ts.browser(t)
				resp, body := br.get(link)
				wantStatus(t, resp, http.StatusOK)
				contains(t, body, "Acme agency")
				contains(t, body, "/signup?next=") // no account yet: sign up, then come back
				br.signup(email)
				_, body = br.get(link)
				contains(t, body, "Join Acme agency")
				resp, _ = br.post(link, url.Values{"csrf_token": {br.csrf}})
				wantStatus(t, resp, http.StatusSeeOther)
				return br
			}
			editorLink := invite("editor@example.com", "editor")
			viewerLink := invite("viewer@example.com", "viewer")
			ed := join("editor@example.com", editorLink)
			vw := join("viewer@example.com", viewerLink)

			// The viewer reads and exports, and sees no button it cannot use.
			resp, body := vw.get(sitePath)
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "Acme shop")
			contains(t, body, "shop.acme.test")
			if strings.Contains(body, "No completed scan yet") {
				t.Errorf("the viewer's site page does not show the completed scan")
			}
			if strings.Contains(body, ">Scan now</button>") || strings.Contains(body, ">Edit site</a>") {
				t.Errorf("the viewer's site page shows Scan now or Edit site")
			}
			resp, body = vw.get("/api/sites/" + siteID + "/export")
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "Page URL")
			// ... and a forged Scan now or budget edit is 403 with nothing changed.
			scansBefore, _ := st.ScansOf(ctx, ts.storeUser(t, "owner@example.com"), siteID, 10)
			resp, _ = vw.post(sitePath+"/scan", url.Values{"csrf_token": {vw.csrf}})
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = vw.post(sitePath+"/budgets", url.Values{"csrf_token": {vw.csrf}, "budget_performance": {"99"}})
			wantStatus(t, resp, http.StatusForbidden)
			scansAfter, _ := st.ScansOf(ctx, ts.storeUser(t, "owner@example.com"), siteID, 10)
			budgets, _ := st.Budgets(ctx, ts.storeUser(t, "owner@example.com"), siteID)
			if len(scansAfter) != len(scansBefore) || len(budgets) != 0 {
				t.Errorf("the viewer's refused requests changed something: %d scans (was %d), budgets %v", len(scansAfter), len(scansBefore), budgets)
			}

			// Only the owner sets the workspace's retention; the page shows it and the space used.
			resp, _ = vw.post(wsPath+"/retention", url.Values{"csrf_token": {vw.csrf}, "retention_days": {"1"}})
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = own.post(wsPath+"/retention", url.Values{"csrf_token": {own.csrf}, "retention_days": {"abc"}})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			resp, _ = own.post(wsPath+"/retention", url.Values{"retention_days": {"7"}}) // no CSRF token
			wantStatus(t, resp, http.StatusForbidden)
			resp, _ = own.post(wsPath+"/retention", url.Values{"csrf_token": {own.csrf}, "retention_days": {"90"}})
			wantStatus(t, resp, http.StatusSeeOther)
			if w, _ := st.Workspace(ctx, ts.storeUser(t, "owner@example.com"), ws); w.RetentionDays != 90 {
				t.Errorf("retention %d after the owner set 90", w.RetentionDays)
			}
			_, body = vw.get(wsPath)
			contains(t, body, "kept 90 days")
			contains(t, body, "in the database")
			if strings.Contains(body, `name="retention_days"`) {
				t.Error("the viewer's workspace page shows the retention form")
			}
			_, body = own.get(wsPath)
			contains(t, body, `name="retention_days"`)

			// The editor works on the site, with the browser and with an MCP client.
			editorID := ts.storeUser(t, "editor@example.com")
			token := mcpToken(t, st, editorID, ts.now)
			resp, _ = ed.post(sitePath+"/budgets", url.Values{"csrf_token": {ed.csrf}, "budget_performance": {"80"}})
			wantStatus(t, resp, http.StatusSeeOther)
			if text, isErr := callTool(t, ts, token, "get_latest_scan", siteID); isErr || !strings.Contains(text, scanID) {
				t.Fatalf("the editor's MCP call: %v %.200s", isErr, text)
			}

			// The editor follows a queued scan's progress; the owner removes the editor meanwhile:
			// the open stream ends at its next poll, and the very next requests are refused.
			queued := store.Scan{ID: store.NewID(), SiteID: siteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: ts.now}
			must(t, st.EnqueueScan(ctx, queued, store.KindScan, ts.now))
			stream, err := ed.c.Get(ts.URL + sitePath + "/scans/" + queued.ID + "/events")
			must(t, err)
			defer stream.Body.Close()
			wantStatus(t, stream, http.StatusOK)
			var after []scanEvent
			first := true
			readEvents(t, stream, func(e scanEvent) bool {
				if first {
					first = false
					resp, _ := own.post(wsPath+"/members/"+editorID+"/remove", url.Values{"csrf_token": {own.csrf}})
					wantStatus(t, resp, http.StatusSeeOther)
					return true
				}
				after = append(after, e)
				return true
			})
			for _, e := range after {
				if e.Status == store.StatusQueued || e.Status == store.StatusRunning {
					t.Errorf("the removed editor's open stream still reads the scan: %+v", e)
				}
			}
			resp, _ = ed.get(sitePath)
			wantStatus(t, resp, http.StatusNotFound)
			resp, _ = ed.get(sitePath + "/scans/" + scanID + "/events")
			wantStatus(t, resp, http.StatusNotFound)
			if text, isErr := callTool(t, ts, token, "get_latest_scan", siteID); !isErr || text != "Site not found or not owned by you" {
				t.Errorf("the removed editor's MCP call: %v %q", isErr, text)
			}
			// The used link grants nothing again.
			resp, _ = ed.post(editorLink, url.Values{"csrf_token": {ed.csrf}})
			wantStatus(t, resp, http.StatusGone)
			resp, _ = ed.get(sitePath)
			wantStatus(t, resp, http.StatusNotFound)

			// The owner's audit log tells who did what.
			_, body = own.get(wsPath + "/audit-log")
			for _, want := range []string{store.LogInvitationCreated, "editor@example.com", store.LogMemberRemoved, store.LogInvitationAccepted, "viewer"} {
				contains(t, body, want)
			}
		})
	}
}

// storeUser is the id of the account with email.
func (ts *testServer) storeUser(t *testing.T, email string) string {
	t.Helper()
	u, err := ts.store.UserByEmail(context.Background(), email)
	must(t, err)
	return u.ID
}

// completeScan records a completed scan of a site with the fixtures' results.
func completeScan(t *testing.T, st store.Store, siteID string, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	results := fixtureResults(t, "home.mobile")
	sc := store.Scan{ID: store.NewID(), SiteID: siteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	must(t, st.EnqueueScan(ctx, sc, store.KindDemo, at))
	job, err := st.ClaimJob(ctx, store.KindDemo, "test", at, 0)
	must(t, err)
	must(t, st.StartScan(ctx, job.Lease(), len(results), at))
	for _, r := range results {
		must(t, st.SavePageResult(ctx, job.Lease(), r))
	}
	must(t, st.CompleteScan(ctx, job.Lease(), analysis.ScanScores(results), at.Add(time.Minute)))
	return sc.ID
}

// mcpToken connects an OAuth client for a user and returns a valid access token.
func mcpToken(t *testing.T, st store.Store, userID string, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	client := "c_" + strings.ReplaceAll(store.NewID(), "-", "")
	must(t, st.CreateClient(ctx, store.OAuthClient{ID: client, Name: "Test client", RedirectURIs: []string{"http://127.0.0.1/cb"},
		GrantTypes: []string{"authorization_code"}, AuthMethod: "none", Scope: store.ScopeAll, CreatedAt: now}))
	at, hash := store.NewSecret("at_")
	must(t, st.CreateTokens(ctx, store.OAuthToken{TokenHash: hash, Kind: store.TokenAccess, ClientID: client, UserID: userID,
		FamilyID: store.NewID(), Scope: store.ScopeAll, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}))
	return at
}

// callTool calls an MCP tool with a siteId and answers its text and whether it is a tool error.
func callTool(t *testing.T, ts *testServer, token, tool, siteID string) (string, bool) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/api/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"siteId":"`+siteID+`"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body := readBody(t, resp)
	var out struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Result.Content) == 0 {
		t.Fatalf("MCP answer: %s", body)
	}
	return out.Result.Content[0].Text, out.Result.IsError
}

// An owner may hold at most store.MaxPendingInvitations pending invitations, and bad input is
// a 422 with the field's message, never a 500.
func TestInvitationLimitsAndBadInput(t *testing.T) {
	st := storetest.Backends(t)[0].Open(t)
	ts := newTestServer(t, st)
	own := ts.browser(t)
	own.signup("owner@example.com")
	ws := "/workspaces/" + ts.storeUser(t, "owner@example.com")
	for _, bad := range []url.Values{{"email": {"not an address"}, "role": {"viewer"}}, {"email": {"x@example.com"}, "role": {"admin"}}} {
		bad.Set("csrf_token", own.csrf)
		resp, _ := own.postFollow(ws+"/invitations", bad)
		wantStatus(t, resp, http.StatusUnprocessableEntity)
	}
	for i := range store.MaxPendingInvitations {
		resp, _ := own.postFollow(ws+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {fmt.Sprintf("p%d@example.com", i)}, "role": {"viewer"}})
		wantStatus(t, resp, http.StatusOK)
	}
	resp, body := own.postFollow(ws+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {"one-more@example.com"}, "role": {"viewer"}})
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	contains(t, body, "pending invitations, the most it may hold")
	for _, name := range []string{"", "\u202eevil", strings.Repeat("n", 101)} {
		resp, _ := own.post("/workspaces", url.Values{"csrf_token": {own.csrf}, "name": {name}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
	}
	resp, _ = own.post("/workspaces/not-a-uuid/invitations", url.Values{"csrf_token": {own.csrf}, "email": {"a@example.com"}, "role": {"viewer"}})
	wantStatus(t, resp, http.StatusNotFound)
	resp, _ = own.get("/invite/inv_" + strings.Repeat("x", 300))
	wantStatus(t, resp, http.StatusNotFound)
}

// An edit is checked against the role of who makes it, not of who added the site: an editor
// changes a site whose adder was made a viewer, and the viewer no longer can.
func TestEditsAreTheEditorsNotTheAdders(t *testing.T) {
	st := storetest.Backends(t)[0].Open(t)
	ts := newTestServer(t, st)
	own := ts.browser(t)
	own.signup("owner@example.com")
	resp, _ := own.post("/workspaces", url.Values{"csrf_token": {own.csrf}, "name": {"Acme"}})
	wsPath := strings.TrimSuffix(resp.Header.Get("Location"), "?done=created")
	join := func(email string) *browser {
		_, body := own.postFollow(wsPath+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {email}, "role": {"editor"}})
		link := "/invite/" + inviteLinkRe.FindStringSubmatch(body)[1]
		outboxFor(st).next(t, email)
		br := ts.browser(t)
		br.signup(email)
		resp, _ := br.post(link, url.Values{"csrf_token": {br.csrf}})
		wantStatus(t, resp, http.StatusSeeOther)
		return br
	}
	adder, editor := join("adder@example.com"), join("editor@example.com")
	resp, _ = adder.post("/sites", url.Values{"csrf_token": {adder.csrf}, "workspace": {strings.TrimPrefix(wsPath, "/workspaces/")}, "name": {"Shop"}, "domain": {"shop.example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	sitePath, _, _ := strings.Cut(resp.Header.Get("Location"), "?")
	resp, _ = own.post(wsPath+"/members/"+ts.storeUser(t, "adder@example.com"), url.Values{"csrf_token": {own.csrf}, "role": {"viewer"}})
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = editor.post(sitePath, url.Values{"csrf_token": {editor.csrf}, "name": {"Renamed"}, "domain": {"shop.example.com"}})
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = adder.post(sitePath, url.Values{"csrf_token": {adder.csrf}, "name": {"Taken back"}, "domain": {"shop.example.com"}})
	wantStatus(t, resp, http.StatusForbidden)
	_, body := own.get(sitePath)
	contains(t, body, "Renamed")
	_, body = own.get(wsPath)
	for _, want := range []string{store.LogSiteAdded, store.LogRoleChanged, store.LogSiteChanged, "adder@example.com", "Renamed"} {
		contains(t, body, want)
	}
}

// An owner deletes a workspace from its page by typing its name: its sites, report links and API
// keys stop working at once and its members lose it; a viewer's forged POST is 403 with nothing
// changed, a wrong name 422, and a personal workspace is refused (409) and shows no button.
func TestDeleteWorkspace(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			ts := newTestServer(t, st)
			ctx := context.Background()
			own := ts.browser(t)
			own.signup("owner@example.com")
			ownerID := ts.storeUser(t, "owner@example.com")
			resp, _ := own.post("/workspaces", url.Values{"csrf_token": {own.csrf}, "name": {"Acme agency"}})
			wsPath := strings.TrimSuffix(resp.Header.Get("Location"), "?done=created")
			ws := strings.TrimPrefix(wsPath, "/workspaces/")
			resp, _ = own.post("/sites", url.Values{"csrf_token": {own.csrf}, "workspace": {ws}, "name": {"Acme shop"}, "domain": {"shop.acme.test"}})
			wantStatus(t, resp, http.StatusSeeOther)
			sitePath, _, _ := strings.Cut(resp.Header.Get("Location"), "?")
			siteID := strings.TrimPrefix(sitePath, "/sites/")
			scanID := completeScan(t, st, siteID, ts.now)
			reportToken, reportHash := store.NewSecret("")
			must(t, st.CreateReport(ctx, store.Report{ID: store.NewID(), TokenHash: reportHash, ScanID: scanID, UserID: ownerID, Title: "For the client", CreatedAt: ts.now}))
			key, keyHash := store.NewSecret("svc_")
			must(t, st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: ownerID, WorkspaceID: ws, Name: "ci", KeyHash: keyHash, Prefix: key[:8], CreatedAt: ts.now}))
			budgetCheck := func() int {
				t.Helper()
				req, err := http.NewRequest("POST", ts.URL+"/api/external/budget-check", strings.NewReader(`{"siteId":"`+siteID+`"}`))
				must(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				must(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := budgetCheck(); code != http.StatusOK {
				t.Fatalf("the workspace's key before deletion: %d", code)
			}
			resp, _ = own.get("/report/" + reportToken)
			wantStatus(t, resp, http.StatusOK)

			_, body := own.postFollow(wsPath+"/invitations", url.Values{"csrf_token": {own.csrf}, "email": {"viewer@example.com"}, "role": {"viewer"}})
			link := "/invite/" + inviteLinkRe.FindStringSubmatch(body)[1]
			outboxFor(st).next(t, "viewer@example.com")
			vw := ts.browser(t)
			vw.signup("viewer@example.com")
			resp, _ = vw.post(link, url.Values{"csrf_token": {vw.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)

			// The button is the owner's, and never on a personal workspace.
			_, body = own.get(wsPath)
			contains(t, body, ">Delete workspace</button>")
			_, body = vw.get(wsPath)
			if strings.Contains(body, ">Delete workspace</button>") {
				t.Errorf("the viewer sees Delete workspace")
			}
			_, body = own.get("/workspaces/" + ownerID)
			if strings.Contains(body, ">Delete workspace</button>") {
				t.Errorf("the personal workspace shows Delete workspace")
			}

			// Refusals change nothing.
			resp, _ = vw.post(wsPath+"/delete", url.Values{"csrf_token": {vw.csrf}, "confirm": {"Acme agency"}})
			wantStatus(t, resp, http.StatusForbidden)
			resp, body = own.post(wsPath+"/delete", url.Values{"csrf_token": {own.csrf}, "confirm": {"Acme"}})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, "type its name")
			resp, body = own.post("/workspaces/"+ownerID+"/delete", url.Values{"csrf_token": {own.csrf}, "confirm": {"owner's workspace"}})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "A personal workspace cannot be deleted")
			resp, _ = own.post(wsPath+"/delete", url.Values{"confirm": {"Acme agency"}})
			wantStatus(t, resp, http.StatusForbidden) // no CSRF token
			resp, _ = vw.get(sitePath)
			wantStatus(t, resp, http.StatusOK)

			resp, _ = own.post(wsPath+"/delete", url.Values{"csrf_token": {own.csrf}, "confirm": {" Acme agency "}})
			wantStatus(t, resp, http.StatusSeeOther)
			if loc := resp.Header.Get("Location"); loc != "/?done=workspace-deleted" {
				t.Fatalf("redirect to %q, want the sites list", loc)
			}
			_, body = own.get("/?done=workspace-deleted")
			contains(t, body, "Workspace deleted")
			for _, br := range []*browser{own, vw} {
				resp, _ = br.get(wsPath)
				wantStatus(t, resp, http.StatusNotFound)
				resp, _ = br.get(sitePath)
				wantStatus(t, resp, http.StatusNotFound)
			}
			if resp, _ = own.get("/report/" + reportToken); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusGone {
				t.Errorf("the deleted workspace's report link answers %d, want 404 or 410", resp.StatusCode)
			}
			if code := budgetCheck(); code != http.StatusUnauthorized {
				t.Errorf("the deleted workspace's API key answers %d, want 401", code)
			}
			if _, err := st.Scan(ctx, ownerID, scanID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the deleted workspace's scan: %v", err)
			}
			resp, _ = own.get("/workspaces/" + ownerID)
			wantStatus(t, resp, http.StatusOK)
		})
	}
}
