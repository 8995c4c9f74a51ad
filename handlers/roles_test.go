package handlers

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The roles of the walk, in the order of every want array.
const (
	owner = iota
	editor
	viewer
	removed // was an editor, then removed
	stranger
	nRoles
)

var roleNames = [nRoles]string{"owner", "editor", "viewer", "removed member", "stranger"}

// rolesFixture is the API fixture with a team: A (the demo account) owns its personal workspace,
// where E is an editor and V a viewer; R was an editor and was removed; S (the fixture's B) is
// a stranger with a workspace of its own. Every one has a session, an OAuth access token that
// may read and publish, and an API key.
type rolesFixture struct {
	*apiFixture
	ws    string // A's workspace: the team's
	roles [nRoles]apiAccount
	// invitation is a pending invitation of the workspace, for S's e-mail, and its token.
	invitationID, invitationToken string
}

func newRolesFixture(t *testing.T, st store.Store) *rolesFixture {
	t.Helper()
	ctx := context.Background()
	double := platformtest.New(t, appID, appSecret)
	f := &rolesFixture{apiFixture: newAPIFixtureWith(t, st, func(d *Deps) {
		d.Platform = &platform.Connector{Store: st, Keys: platform.RandomKeys(), WebhookURL: d.BaseURL + "/api/webhooks/platform", MaxSites: 50,
			Log: slog.New(slog.DiscardHandler), Now: time.Now, Client: platform.NewClient(platform.ClientConfig{APIURL: double.URL, ClientID: appID, ClientSecret: appSecret})}
		d.PlatformSecret, d.PlatformClientID, d.PlatformAuthorizeURL = appSecret, appID, double.AuthorizeURL()
	})}
	f.ws = f.a.userID
	f.roles[owner], f.roles[stranger] = f.a, f.b
	join := func(email string, role store.Role) apiAccount {
		u := store.User{ID: store.NewID(), Email: email, PasswordHash: "x", CreatedAt: f.now}
		must(t, st.CreateUser(ctx, u))
		token, hash := store.NewSecret("inv_")
		must(t, st.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: hash, WorkspaceID: f.ws, Email: email, Role: role,
			InvitedBy: f.a.userID, CreatedAt: f.now, ExpiresAt: f.now.Add(store.InvitationTTL)}))
		_, err := st.AcceptInvitation(ctx, store.HashSecret(token), u.ID, email, f.now)
		must(t, err)
		acc := apiAccount{userID: u.ID}
		f.credentials(t, &acc)
		// A key of the team's workspace where the role may make one, else of their own.
		key, keyHash := store.NewSecret("svc_")
		k := store.APIKey{ID: store.NewID(), UserID: u.ID, WorkspaceID: f.ws, Name: "ci", KeyHash: keyHash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: f.now}
		if !role.Can(store.ActEdit) {
			k.WorkspaceID = u.ID
		}
		must(t, st.CreateAPIKey(ctx, k))
		acc.apiKey, acc.apiKeyID = key, k.ID
		return acc
	}
	f.roles[editor] = join("editor@example.com", store.RoleEditor)
	f.roles[viewer] = join("viewer@example.com", store.RoleViewer)
	f.roles[removed] = join("removed@example.com", store.RoleEditor)
	must(t, st.RemoveMember(ctx, f.ws, f.roles[removed].userID))
	for i := range f.roles { // tokens that may publish, so the walk asks the role, not the scope
		at, atHash := store.NewSecret("at_")
		must(t, st.CreateTokens(ctx, store.OAuthToken{TokenHash: atHash, Kind: store.TokenAccess, ClientID: f.roles[i].clientID, UserID: f.roles[i].userID,
			FamilyID: store.NewID(), Scope: store.ScopeAll, CreatedAt: f.now, ExpiresAt: f.now.Add(24 * time.Hour)}))
		f.roles[i].accessToken = at
	}
	token, hash := store.NewSecret("inv_")
	f.invitationID, f.invitationToken = store.NewID(), token
	must(t, st.CreateInvitation(ctx, store.Invitation{ID: f.invitationID, TokenHash: hash, WorkspaceID: f.ws, Email: "b@example.com", Role: store.RoleViewer,
		InvitedBy: f.a.userID, CreatedAt: f.now, ExpiresAt: f.now.Add(store.InvitationTTL)}))
	return f
}

// roleCase is one route walked as every role. want is the status per role; fresh runs each
// role whose request succeeds on a fixture of its own, for a request whose success changes what
// the next role sees.
type roleCase struct {
	route  string // the pattern in routes.go
	method string
	path   func(f *rolesFixture) string
	form   url.Values // cookie POSTs get the role's CSRF token
	json   string
	bearer bool // the role's OAuth access token instead of its session
	apiKey bool // the role's API key
	want   [nRoles]int
	fresh  bool
}

func all(status int) [nRoles]int { return [nRoles]int{status, status, status, status, status} }

func fixedPath(p string) func(*rolesFixture) string { return func(*rolesFixture) string { return p } }

func site(suffix string) func(*rolesFixture) string {
	return func(f *rolesFixture) string { return "/sites/" + f.a.siteID + suffix }
}

func team(suffix string) func(*rolesFixture) string {
	return func(f *rolesFixture) string { return "/workspaces/" + f.ws + suffix }
}

// Statuses of the roles: who may read, who may edit, who may manage.
var (
	reads   = [nRoles]int{200, 200, 200, 404, 404}
	edits   = [nRoles]int{303, 303, 403, 404, 404}
	manages = [nRoles]int{303, 403, 403, 404, 404}
	audits  = [nRoles]int{200, 403, 403, 404, 404}
)

var roleCases = []roleCase{
	// Operations, assets, accounts: no workspace's data, the same for every role.
	{route: "GET /healthz", method: "GET", path: fixedPath("/healthz"), want: all(200)},
	{route: "GET /readyz", method: "GET", path: fixedPath("/readyz"), want: all(200)},
	{route: "GET /metrics", method: "GET", path: fixedPath("/metrics"), want: all(404)}, // no METRICS_TOKEN: off
	{route: "GET /static/", method: "GET", path: fixedPath("/static/style.css"), want: all(200)},
	{route: "GET /favicon.ico", method: "GET", path: fixedPath("/favicon.ico"), want: all(301)},
	{route: "GET /signup", method: "GET", path: fixedPath("/signup"), want: all(303)}, // signed in: to the sites
	{route: "POST /signup", method: "POST", path: fixedPath("/signup"), form: url.Values{"email": {"x"}, "password": {"short"}}, want: all(422)},
	{route: "GET /signup/confirm/{token}", method: "GET", path: fixedPath("/signup/confirm/forged"), want: all(400)},
	{route: "POST /signup/confirm/{token}", method: "POST", path: fixedPath("/signup/confirm/forged"), form: url.Values{"password": {"a fine new password"}}, want: all(400)},
	{route: "GET /login", method: "GET", path: fixedPath("/login"), want: all(303)}, // signed in: to the sites
	// No provider is configured here: single sign-on is off (sso_test.go walks it with one).
	{route: "GET /login/sso", method: "GET", path: fixedPath("/login/sso"), want: all(404)},
	{route: "GET /login/sso/callback", method: "GET", path: fixedPath("/login/sso/callback?code=x&state=y"), want: all(404)},
	{route: "GET /login/sso/w/{workspaceId}", method: "GET", path: fixedPath("/login/sso/w/00000000-0000-4000-8000-000000000000"), want: all(404)},
	{route: "POST /login", method: "POST", path: fixedPath("/login"), form: url.Values{"email": {"nobody@example.com"}, "password": {"wrong password"}}, want: all(401)},
	{route: "POST /logout", method: "POST", path: fixedPath("/logout"), form: url.Values{}, want: all(303), fresh: true},
	// Recovery works signed in or out, the same for every role: the e-mailed link is the
	// credential, and one never issued is not found.
	{route: "GET /password/forgot", method: "GET", path: fixedPath("/password/forgot"), want: all(200)},
	{route: "POST /password/forgot", method: "POST", path: fixedPath("/password/forgot"), form: url.Values{"email": {"nobody@example.com"}}, want: all(303)},
	{route: "GET /password/reset/{token}", method: "GET", path: fixedPath("/password/reset/rst_never-issued"), want: all(404)},
	{route: "POST /password/reset/{token}", method: "POST", path: fixedPath("/password/reset/rst_never-issued"), form: url.Values{"password": {"a fine new password"}}, want: all(404)},
	{route: "GET /email/confirm/{token}", method: "GET", path: fixedPath("/email/confirm/eml_never-issued"), want: all(404)},
	{route: "POST /email/confirm/{token}", method: "POST", path: fixedPath("/email/confirm/eml_never-issued"), form: url.Values{}, want: all(404)},

	// Settings: the visitor's own keys, apps and e-mails; a key is made in a workspace the
	// visitor may edit.
	{route: "GET /settings", method: "GET", path: fixedPath("/settings"), want: all(200)},
	// The account's own forms: each asks its current password first (none here: 422, before
	// the login throttle counts anything), whatever the role anywhere.
	{route: "POST /settings/password", method: "POST", path: fixedPath("/settings/password"), form: url.Values{"new_password": {"a fine new password"}}, want: all(422)},
	{route: "POST /settings/email", method: "POST", path: fixedPath("/settings/email"), form: url.Values{"email": {"<role>@new.example.com"}}, want: all(422)},
	// Signing out everywhere else ends the apps connected since the password was set (issue 44
	// attack 3), the walk's own tokens among them: each role on a fixture of its own.
	{route: "POST /settings/sessions/end-others", method: "POST", path: fixedPath("/settings/sessions/end-others"), form: url.Values{}, want: all(303), fresh: true},
	{route: "POST /settings/delete", method: "POST", path: fixedPath("/settings/delete"), form: url.Values{}, want: all(422)},
	{route: "POST /settings/api-keys", method: "POST", path: fixedPath("/settings/api-keys"), form: url.Values{"name": {"deploy"}},
		want: all(303)},
	{route: "POST /settings/api-keys", method: "POST", path: fixedPath("/settings/api-keys"), form: url.Values{"name": {"team key"}, "workspace": {"<ws>"}},
		want: [nRoles]int{303, 303, 403, 404, 404}},
	{route: "POST /settings/api-keys/{keyID}/revoke", method: "POST", path: func(f *rolesFixture) string { return "/settings/api-keys/" + f.a.apiKeyID + "/revoke" },
		form: url.Values{}, want: [nRoles]int{303, 404, 404, 404, 404}, fresh: true},
	{route: "POST /settings/notifications", method: "POST", path: fixedPath("/settings/notifications"), form: url.Values{"notify_regressions": {"on"}}, want: all(303)},
	{route: "POST /settings/connected-apps/{clientID}/revoke", method: "POST", path: func(f *rolesFixture) string { return "/settings/connected-apps/" + f.a.clientID + "/revoke" },
		form: url.Values{}, want: [nRoles]int{303, 404, 404, 404, 404}, fresh: true},

	// Alert channels are the workspace's: every member reads the Notifications page, owners and
	// editors add, test and delete channels, a viewer gets 403, the others 404. The old address
	// leads each visitor to their personal workspace's page. (The fixture's channel is an e-mail
	// one: the fixture has no sealing key, and an e-mail channel has nothing to seal.)
	{route: "GET /settings/notifications", method: "GET", path: fixedPath("/settings/notifications"), want: all(302)},
	{route: "GET /workspaces/{workspaceId}/notifications", method: "GET", path: team("/notifications"), want: reads},
	{route: "POST /workspaces/{workspaceId}/channels", method: "POST", path: team("/channels"),
		form: url.Values{"name": {"team mail"}, "kind": {"email"}, "events": {"scan.failed"}}, want: edits, fresh: true},
	{route: "POST /workspaces/{workspaceId}/channels", method: "POST", path: team("/channels"),
		form: url.Values{"name": {"slack"}, "kind": {"slack"}, "url": {"https://hooks.slack.test/x"}, "events": {"scan.failed"}}, want: [nRoles]int{503, 503, 403, 404, 404}}, // no sealing key
	{route: "POST /workspaces/{workspaceId}/channels/{channelId}/test", method: "POST", path: func(f *rolesFixture) string { return "/workspaces/" + f.ws + "/channels/" + f.a.channelID + "/test" },
		form: url.Values{}, want: edits},
	{route: "POST /workspaces/{workspaceId}/channels/{channelId}/delete", method: "POST", path: func(f *rolesFixture) string { return "/workspaces/" + f.ws + "/channels/" + f.a.channelID + "/delete" },
		form: url.Values{}, want: edits, fresh: true},

	// OAuth authorization server and the docs: no workspace's data.
	{route: "GET /.well-known/oauth-authorization-server", method: "GET", path: fixedPath("/.well-known/oauth-authorization-server"), want: all(200)},
	{route: "GET /.well-known/oauth-authorization-server/api/mcp", method: "GET", path: fixedPath("/.well-known/oauth-authorization-server/api/mcp"), want: all(200)},
	{route: "GET /.well-known/oauth-protected-resource", method: "GET", path: fixedPath("/.well-known/oauth-protected-resource"), want: all(200)},
	{route: "GET /.well-known/oauth-protected-resource/api/mcp", method: "GET", path: fixedPath("/.well-known/oauth-protected-resource/api/mcp"), want: all(200)},
	{route: "POST /api/oauth/register", method: "POST", path: fixedPath("/api/oauth/register"), json: `{}`, want: all(400)},
	{route: "POST /api/oauth/token", method: "POST", path: fixedPath("/api/oauth/token"), form: url.Values{"grant_type": {"authorization_code"}}, want: all(400)},
	{route: "POST /api/oauth/revoke", method: "POST", path: fixedPath("/api/oauth/revoke"), form: url.Values{"token": {"at_unknown"}}, want: all(200)},
	{route: "GET /oauth/authorize", method: "GET", path: fixedPath("/oauth/authorize"), want: all(400)},
	{route: "POST /oauth/consent", method: "POST", path: fixedPath("/oauth/consent"), form: url.Values{}, want: all(400)},
	{route: "GET /docs/mcp", method: "GET", path: fixedPath("/docs/mcp"), want: all(200)},
	{route: "OPTIONS ", method: "OPTIONS", path: fixedPath("/api/oauth/token"), want: all(204)},

	// MCP: the transport; every tool is walked by TestRolesWalkEveryTool.
	{route: "POST /api/mcp", method: "POST", path: fixedPath("/api/mcp"), bearer: true, json: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want: all(200)},
	{route: "GET /api/mcp", method: "GET", path: fixedPath("/api/mcp"), bearer: true, want: all(405)},
	{route: "DELETE /api/mcp", method: "DELETE", path: fixedPath("/api/mcp"), bearer: true, want: all(405)},
	{route: "GET /report/{token}", method: "GET", path: fixedPath("/report/never-issued"), want: all(404)},
	// A report's screenshots: its token is the credential, whoever holds it; only its scan's.
	{route: "GET /report/{token}/images/{index}", method: "GET", path: func(f *rolesFixture) string {
		return "/report/" + f.a.reportToken + "/images/0?path=%2F&strategy=mobile"
	}, want: all(200)},
	{route: "GET /report/{token}/images/{index}", method: "GET", path: fixedPath("/report/never-issued/images/0?path=%2F&strategy=mobile"), want: all(404)},
	{route: "POST /api/webhooks/platform", method: "POST", path: fixedPath("/api/webhooks/platform"), json: `{}`, want: all(401)},
	// The beacon: public, the same for everyone (a beacon is text/plain; JSON is refused first).
	{route: "GET /beacon/v1.js", method: "GET", path: fixedPath("/beacon/v1.js"), want: all(200)},
	{route: "POST /api/beacon/{publicId}", method: "POST", path: fixedPath("/api/beacon/b_AAAAAAAAAAAAAAAA"), json: `{}`, want: all(415)},

	// The platform connection is the workspace's: an owner's.
	{route: "GET /platform/connect", method: "GET", path: func(f *rolesFixture) string { return "/platform/connect?workspace=" + f.ws },
		want: [nRoles]int{302, 403, 403, 404, 404}},
	{route: "GET /platform/callback", method: "GET", path: fixedPath("/platform/callback?state=forged&code=c"), want: all(400)},
	{route: "GET /platform/import", method: "GET", path: func(f *rolesFixture) string { return "/platform/import?workspace=" + f.ws },
		want: [nRoles]int{200, 403, 403, 404, 404}},
	{route: "POST /platform/import", method: "POST", path: fixedPath("/platform/import"), form: url.Values{"workspace": {"<ws>"}, "site": {"x"}},
		want: [nRoles]int{409, 403, 403, 404, 404}},
	{route: "POST /platform/disconnect", method: "POST", path: fixedPath("/platform/disconnect"), form: url.Values{"workspace": {"<ws>"}},
		want: manages},

	// Workspaces, members, invitations.
	{route: "POST /workspaces", method: "POST", path: fixedPath("/workspaces"), form: url.Values{"name": {"Another team"}}, want: all(303)},
	{route: "GET /workspaces/{workspaceId}", method: "GET", path: team(""), want: reads},
	{route: "POST /workspaces/{workspaceId}/invitations", method: "POST", path: team("/invitations"), form: url.Values{"email": {"new@example.com"}, "role": {"editor"}},
		want: manages},
	{route: "POST /workspaces/{workspaceId}/invitations/{invitationId}/revoke", method: "POST",
		path: func(f *rolesFixture) string {
			return "/workspaces/" + f.ws + "/invitations/" + f.invitationID + "/revoke"
		}, form: url.Values{}, want: manages, fresh: true},
	{route: "POST /workspaces/{workspaceId}/members/{userId}", method: "POST",
		path: func(f *rolesFixture) string { return "/workspaces/" + f.ws + "/members/" + f.roles[viewer].userID },
		form: url.Values{"role": {"viewer"}}, want: manages},
	{route: "POST /workspaces/{workspaceId}/members/{userId}/remove", method: "POST",
		path: func(f *rolesFixture) string {
			return "/workspaces/" + f.ws + "/members/" + f.roles[editor].userID + "/remove"
		},
		form: url.Values{}, want: manages, fresh: true},
	// The team's workspace is the owner's personal one: even its owner may not delete it.
	{route: "POST /workspaces/{workspaceId}/delete", method: "POST", path: team("/delete"), form: url.Values{}, want: [nRoles]int{409, 403, 403, 404, 404}, fresh: true},
	// The owner is the only owner: leaving is refused until another member is made owner.
	{route: "POST /workspaces/{workspaceId}/leave", method: "POST", path: team("/leave"), form: url.Values{}, want: [nRoles]int{409, 303, 303, 404, 404}, fresh: true},
	{route: "POST /workspaces/{workspaceId}/notifications", method: "POST", path: team("/notifications"), form: url.Values{}, want: [nRoles]int{303, 303, 303, 404, 404}},
	// Only owners set how long page details are kept.
	{route: "POST /workspaces/{workspaceId}/retention", method: "POST", path: team("/retention"), form: url.Values{"retention_days": {"90"}}, want: manages},
	// Single sign-on: every member reads the rule; only owners change it. Verifying needs a
	// domain, which the fresh workspace has not (the verification itself: sso_test.go).
	{route: "GET /workspaces/{workspaceId}/sso", method: "GET", path: team("/sso"), want: reads},
	{route: "POST /workspaces/{workspaceId}/sso/domain", method: "POST", path: team("/sso/domain"), form: url.Values{"domain": {"acme.example"}}, want: manages, fresh: true},
	{route: "POST /workspaces/{workspaceId}/sso/verify", method: "POST", path: team("/sso/verify"), form: url.Values{}, want: [nRoles]int{422, 403, 403, 404, 404}, fresh: true},
	{route: "POST /workspaces/{workspaceId}/sso/require", method: "POST", path: team("/sso/require"), form: url.Values{"jit_role": {""}}, want: manages},
	// A workspace's own provider: only owners set it (an issuer that is not a URL: 422).
	{route: "POST /workspaces/{workspaceId}/sso/provider", method: "POST", path: team("/sso/provider"), form: url.Values{"issuer": {"not a url"}, "client_id": {"x"}}, want: [nRoles]int{422, 403, 403, 404, 404}},
	// Removing it (the fresh workspace has none: nothing to remove, 303); refused while
	// required: sso_workspace_test.go.
	{route: "POST /workspaces/{workspaceId}/sso/provider/delete", method: "POST", path: team("/sso/provider/delete"), form: url.Values{}, want: manages, fresh: true},
	// The audit log is its owners' (there is no admin role): an editor or viewer gets 403.
	{route: "GET /workspaces/{workspaceId}/audit-log", method: "GET", path: team("/audit-log?kind=member.&from=2020-01-01"), want: audits},
	{route: "GET /workspaces/{workspaceId}/audit-log/export", method: "GET", path: team("/audit-log/export?format=jsonl"), want: audits},
	{route: "GET /workspaces/{workspaceId}/audit-log/export", method: "GET", path: team("/audit-log/export?format=csv&actor=x%40example.com"), want: audits},
	// The invitation is for S's address: only S may accept it; its page is the link's.
	{route: "GET /invite/{token}", method: "GET", path: func(f *rolesFixture) string { return "/invite/" + f.invitationToken }, want: all(200)},
	{route: "POST /invite/{token}", method: "POST", path: func(f *rolesFixture) string { return "/invite/" + f.invitationToken }, form: url.Values{},
		want: [nRoles]int{403, 403, 403, 403, 303}, fresh: true},

	// Runners: the protocol takes runner tokens only, never a session; owners make and revoke
	// the workspace's tokens, owners and editors name a site's locations.
	{route: "POST /api/runner/leases", method: "POST", path: fixedPath("/api/runner/leases"), json: `{"runner":"r"}`, want: all(401)},
	{route: "POST /api/runner/leases/{leaseId}/heartbeat", method: "POST", path: func(f *rolesFixture) string { return "/api/runner/leases/" + f.a.leaseID + "/heartbeat" },
		json: `{}`, want: all(401)},
	{route: "POST /api/runner/leases/{leaseId}/result", method: "POST", path: func(f *rolesFixture) string { return "/api/runner/leases/" + f.a.leaseID + "/result" },
		json: `{"error":"x"}`, want: all(401)},
	{route: "POST /api/runner/revoke", method: "POST", path: fixedPath("/api/runner/revoke"), json: `{}`, want: all(401)},
	{route: "POST /workspaces/{workspaceId}/runners", method: "POST", path: team("/runners"), form: url.Values{"name": {"office"}},
		want: manages, fresh: true},
	{route: "POST /workspaces/{workspaceId}/runners/{tokenId}/revoke", method: "POST",
		path: func(f *rolesFixture) string {
			return "/workspaces/" + f.ws + "/runners/" + f.a.runnerTokenID + "/revoke"
		}, form: url.Values{},
		want: manages, fresh: true},
	{route: "POST /sites/{siteId}/locations", method: "POST", path: site("/locations"), form: url.Values{"locations": {"staging-lan"}}, want: edits},

	// Budget check with each role's API key: the owner's and the editor's are the team's; the
	// viewer's is of its own workspace; the removed editor's stopped working; S's is S's.
	{route: "POST /api/external/budget-check", method: "POST", path: fixedPath("/api/external/budget-check"), apiKey: true, json: `{"siteId":"<site>"}`,
		want: [nRoles]int{200, 200, 404, 401, 404}},
	// CI: the owner's and the editor's keys are the team's and may start scans (the second
	// call gets the scan the first started); the viewer's key is of its own workspace.
	{route: "POST /api/external/scans", method: "POST", path: fixedPath("/api/external/scans"), apiKey: true, json: `{"siteId":"<site>","commit":"abcdef1"}`,
		want: [nRoles]int{202, 202, 404, 401, 404}, fresh: true},
	{route: "GET /api/external/scans/{scanId}", method: "GET", path: func(f *rolesFixture) string { return "/api/external/scans/" + f.a.scanID }, apiKey: true,
		want: [nRoles]int{200, 200, 404, 401, 404}},
	{route: "POST /api/external/budget-check", method: "POST", path: fixedPath("/api/external/budget-check?format=junit"), apiKey: true, json: `{"siteId":"<site>","waitSeconds":1}`,
		want: [nRoles]int{200, 200, 404, 401, 404}},
	{route: "GET /api/sites/{siteId}/export", method: "GET", path: func(f *rolesFixture) string { return "/api/sites/" + f.a.siteID + "/export" }, want: reads},

	// Sites.
	{route: "GET /{$}", method: "GET", path: fixedPath("/"), want: all(200)},
	{route: "GET /sites/new", method: "GET", path: fixedPath("/sites/new"), want: all(200)},
	{route: "POST /sites", method: "POST", path: fixedPath("/sites"), form: url.Values{"name": {"New"}, "domain": {"<role>.example.com"}, "workspace": {"<ws>"}},
		want: edits},
	{route: "GET /sites/{siteId}", method: "GET", path: site(""), want: reads},
	{route: "GET /sites/{siteId}/edit", method: "GET", path: site("/edit"), want: [nRoles]int{200, 200, 403, 404, 404}},
	{route: "POST /sites/{siteId}", method: "POST", path: site(""), form: url.Values{"name": {"Renamed"}, "domain": {"demo.sitepulse.test"}}, want: edits},
	{route: "POST /sites/{siteId}/access", method: "POST", path: site("/access"), form: url.Values{"kind": {"none"}}, want: edits},
	// A setting with PSI as the backend (the fixture's): refused to those who may edit, 422.
	{route: "POST /sites/{siteId}/access", method: "POST", path: site("/access"), form: url.Values{"kind": {"basic"}, "username": {"u"}, "password": {"p"}},
		want: [nRoles]int{422, 422, 403, 404, 404}},
	// The beacon on the platform: the fixture's site was not imported through a connection, so
	// those who may edit are told to paste the tag (409; the install itself: field_beacon_platform_test.go).
	{route: "POST /sites/{siteId}/beacon/install", method: "POST", path: site("/beacon/install"), form: url.Values{}, want: [nRoles]int{409, 409, 403, 404, 404}},
	{route: "POST /sites/{siteId}/beacon/remove", method: "POST", path: site("/beacon/remove"), form: url.Values{}, want: [nRoles]int{409, 409, 403, 404, 404}},
	{route: "POST /sites/{siteId}/delete", method: "POST", path: site("/delete"), form: url.Values{"confirm": {"yes"}}, want: edits, fresh: true},
	{route: "POST /sites/{siteId}/scan", method: "POST", path: site("/scan"), form: url.Values{}, want: edits},
	{route: "GET /sites/{siteId}/scans/{scanId}", method: "GET", path: func(f *rolesFixture) string { return "/sites/" + f.a.siteID + "/scans/" + f.a.scanID }, want: reads},
	{route: "POST /sites/{siteId}/scans/{scanId}/reports", method: "POST", path: func(f *rolesFixture) string { return "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/reports" },
		form: url.Values{"expires": {"7"}}, want: edits},
	{route: "GET /sites/{siteId}/scans/{scanId}/events", method: "GET", path: func(f *rolesFixture) string { return "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/events" }, want: reads},
	{route: "GET /sites/{siteId}/scans/{scanId}/page", method: "GET", path: func(f *rolesFixture) string {
		return "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/page?path=%2F&strategy=mobile"
	}, want: reads},
	{route: "GET /sites/{siteId}/scans/{scanId}/images/{index}", method: "GET", path: func(f *rolesFixture) string {
		return "/sites/" + f.a.siteID + "/scans/" + f.a.scanID + "/images/0?path=%2F&strategy=mobile"
	}, want: reads},
	{route: "GET /sites/{siteId}/compare", method: "GET", path: func(f *rolesFixture) string {
		return "/sites/" + f.a.siteID + "/compare?from=" + f.a.prevScanID + "&to=" + f.a.scanID
	}, want: reads},
	{route: "GET /sites/{siteId}/budgets", method: "GET", path: site("/budgets"), want: reads},
	{route: "POST /sites/{siteId}/budgets", method: "POST", path: site("/budgets"), form: url.Values{"budget_performance": {"42"}}, want: edits},
	{route: "POST /sites/{siteId}/alert-rules", method: "POST", path: site("/alert-rules"), form: url.Values{"metric": {"cls"}, "operator": {"max"}, "threshold": {"0.5"}}, want: edits},
	{route: "POST /sites/{siteId}/alert-rules/{ruleId}/delete", method: "POST", path: func(f *rolesFixture) string { return "/sites/" + f.a.siteID + "/alert-rules/" + f.a.ruleID + "/delete" },
		form: url.Values{}, want: edits, fresh: true},
	{route: "GET /reports", method: "GET", path: fixedPath("/reports"), want: all(200)},
	{route: "POST /reports/{reportId}/revoke", method: "POST", path: func(f *rolesFixture) string { return "/reports/" + f.a.reportID + "/revoke" }, form: url.Values{}, want: edits},
}

// do sends one case as role r.
func (f *rolesFixture) send(t *testing.T, tc roleCase, r int) (*http.Response, string) {
	t.Helper()
	acc := f.roles[r]
	fill := func(s string) string {
		return strings.NewReplacer("<ws>", f.ws, "<site>", f.a.siteID, "<role>", strings.ReplaceAll(roleNames[r], " ", "-")).Replace(s)
	}
	var ct, body string
	switch {
	case tc.json != "":
		ct, body = "application/json", fill(tc.json)
	case tc.form != nil:
		form := url.Values{}
		for k, v := range tc.form {
			for _, x := range v {
				form.Add(k, fill(x))
			}
		}
		form.Set("csrf_token", acc.csrf)
		ct, body = "application/x-www-form-urlencoded", form.Encode()
	}
	c := cookie(acc.session)
	switch {
	case tc.bearer:
		c = bearer(acc.accessToken)
	case tc.apiKey:
		c = bearer(acc.apiKey)
	}
	return f.do(t, tc.method, tc.path(f), ct, body, c)
}

// TestRolesWalkEveryRoute walks every route of routes.go as owner, editor, viewer, removed
// member and stranger of the team's workspace, asserting each status. A route missing from
// roleCases fails the test.
func TestRolesWalkEveryRoute(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	must(t, err)
	walked := map[string]bool{}
	for _, c := range roleCases {
		walked[c.route] = true
	}
	for _, m := range regexp.MustCompile(`mux\.Handle\("([^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		if !walked[m[1]] {
			t.Errorf("route %q is not walked by roleCases", m[1])
		}
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			shared := newRolesFixture(t, b.Open(t))
			for _, tc := range roleCases {
				for r := range nRoles {
					t.Run(tc.route+" as "+roleNames[r], func(t *testing.T) {
						f := shared
						// A refused request changes nothing, so only a success needs a fixture of its own.
						if tc.fresh && tc.want[r] < 400 {
							f = newRolesFixture(t, b.Open(t))
						}
						resp, body := f.send(t, tc, r)
						if resp.StatusCode != tc.want[r] {
							t.Errorf("%s %s as %s: status %d, want %d: %.200s", tc.method, tc.path(f), roleNames[r], resp.StatusCode, tc.want[r], body)
						}
						if r >= removed && resp.StatusCode < 400 && strings.Contains(body, f.a.siteName) && tc.route != "POST /api/mcp" {
							t.Errorf("the %s's response shows the team's site", roleNames[r])
						}
					})
				}
			}
		})
	}
}

// mcp posts a JSON-RPC body to /api/mcp with a bearer token, speaking 2025-11-25 so that every
// tool is listed (the tools after the interface's nine start at 2025-06-18).
func (f *rolesFixture) mcp(t *testing.T, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", f.URL+"/api/mcp", strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultTransport.RoundTrip(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp, string(b)
}

// TestRolesWalkEveryTool calls every MCP tool as each role with its OAuth token: members read,
// owners and editors publish, a viewer is refused publishing, a removed member and a stranger
// get the same tool error as for an unknown id.
func TestRolesWalkEveryTool(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newRolesFixture(t, b.Open(t))
			_, list := f.mcp(t, f.roles[owner].accessToken, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			var tl struct {
				Result struct {
					Tools []struct {
						Name        string `json:"name"`
						InputSchema struct {
							Required []string `json:"required"`
						} `json:"inputSchema"`
					} `json:"tools"`
				} `json:"result"`
			}
			must(t, json.Unmarshal([]byte(list), &tl))
			if len(tl.Result.Tools) == 0 {
				t.Fatalf("no tools: %s", list)
			}
			for _, tool := range tl.Result.Tools {
				args := map[string]string{}
				for _, req := range tool.InputSchema.Required {
					switch req {
					case "siteId":
						args[req] = f.a.siteID
					case "scanId", "fromScanId", "toScanId":
						args[req] = f.a.scanID // compare_scans compares the scan with itself
					}
				}
				for r := range nRoles {
					t.Run(tool.Name+" as "+roleNames[r], func(t *testing.T) {
						a, _ := json.Marshal(args)
						resp, body := f.mcp(t, f.roles[r].accessToken,
							`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool.Name+`","arguments":`+string(a)+`}}`)
						if resp.StatusCode != 200 {
							t.Fatalf("status %d: %s", resp.StatusCode, body)
						}
						var out struct {
							Result struct {
								IsError bool `json:"isError"`
								Content []struct {
									Text string `json:"text"`
								} `json:"content"`
							} `json:"result"`
						}
						must(t, json.Unmarshal([]byte(body), &out))
						text := ""
						if len(out.Result.Content) > 0 {
							text = out.Result.Content[0].Text
						}
						switch {
						case tool.Name == "list_sites":
							sees := strings.Contains(text, f.a.siteID)
							if out.Result.IsError || sees != (r <= viewer) {
								t.Errorf("list_sites as %s: sees the team's site %v: %.200s", roleNames[r], sees, text)
							}
						case r >= removed:
							want := "Site not found or not owned by you"
							if _, ok := args["scanId"]; ok || args["fromScanId"] != "" {
								want = "Scan not found or not owned by you"
							}
							if !out.Result.IsError || text != want {
								t.Errorf("%s as %s: %q, want the tool error %q", tool.Name, roleNames[r], text, want)
							}
						case (tool.Name == "generate_client_report" || tool.Name == "start_scan") && r == viewer:
							if !out.Result.IsError || !strings.Contains(text, "viewer") {
								t.Errorf("a viewer's %s went through: %.200s", tool.Name, text)
							}
						default:
							if out.Result.IsError {
								t.Errorf("%s as %s: tool error %q", tool.Name, roleNames[r], text)
							}
						}
					})
				}
			}
		})
	}
}
