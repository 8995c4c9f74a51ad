package handlers

import (
	"net/http"

	"sitepulse/store"
)

// addRoutes is the map of the service: every route SitePulse answers is registered here.
func (s *server) addRoutes(mux *http.ServeMux) {
	// Operations: liveness, readiness (503 while draining), Prometheus metrics (behind
	// METRICS_TOKEN; METRICS_ADDR serves them apart). A worker (-role worker) serves these only.
	mux.Handle("GET /healthz", s.handleHealth())
	mux.Handle("GET /readyz", s.handleReady())
	mux.Handle("GET /metrics", s.handleMetrics())
	if s.OpsOnly {
		return
	}

	// Assets.
	mux.Handle("GET /static/", s.handleStatic())
	mux.Handle("GET /favicon.ico", http.RedirectHandler("/static/favicon.svg", http.StatusMovedPermanently))

	// Accounts. Sign-up asks for an e-mail only; its e-mailed link ({token}) leads to the form
	// that chooses the password. "Forgot password" e-mails a single-use link to choose a new
	// one (recovery.go). The e-mailed links' tokens are in their paths, which logs redact
	// (secretPaths).
	mux.Handle("GET /signup", s.handleSignupPage())
	mux.Handle("POST /signup", s.handleSignup())
	mux.Handle("GET /signup/confirm/{token}", s.handleSignupConfirmPage())
	mux.Handle("POST /signup/confirm/{token}", s.handleSignupConfirm())
	mux.Handle("GET /login", s.handleLoginPage())
	mux.Handle("POST /login", s.handleLogin())
	mux.Handle("POST /logout", s.requireUser(s.handleLogout()))
	mux.Handle("GET /password/forgot", s.handleForgotPage())
	mux.Handle("POST /password/forgot", s.handleForgot())
	mux.Handle("GET /password/reset/{token}", s.handleResetPage())
	mux.Handle("POST /password/reset/{token}", s.handleReset())
	// Single sign-on (docs/sso.md): to the operator's OpenID provider and back (sso.go).
	mux.Handle("GET /login/sso", s.handleSSOStart())
	mux.Handle("GET /login/sso/callback", s.handleSSOCallback())
	mux.Handle("GET /login/sso/w/{workspaceId}", s.handleSSOWorkspaceStart()) // a workspace's own provider (sso_workspace.go)
	mux.Handle("GET /email/confirm/{token}", s.handleEmailConfirmPage())
	mux.Handle("POST /email/confirm/{token}", s.handleEmailConfirm())

	// Settings: the account (password, e-mail, sessions, deletion: account.go), API keys,
	// notifications.
	mux.Handle("GET /settings", s.requireUser(s.handleSettings()))
	mux.Handle("POST /settings/password", s.requireUser(s.handleChangePassword()))
	mux.Handle("POST /settings/email", s.requireUser(s.handleChangeEmail()))
	mux.Handle("POST /settings/sessions/end-others", s.requireUser(s.handleEndOtherSessions()))
	mux.Handle("POST /settings/delete", s.requireUser(s.handleDeleteAccount()))
	mux.Handle("POST /settings/api-keys", s.requireUser(s.handleCreateAPIKey()))
	mux.Handle("POST /settings/api-keys/{keyID}/revoke", s.requireUser(s.handleRevokeAPIKey()))
	mux.Handle("POST /settings/notifications", s.requireUser(s.handleNotifications()))
	// Alert channels are the workspace's (below); the old address leads to the personal one's.
	mux.Handle("GET /settings/notifications", s.requireUser(s.handleSettingsNotifications()))
	mux.Handle("POST /settings/connected-apps/{clientID}/revoke", s.requireUser(s.handleRevokeApp()))

	// OAuth 2.1 authorization server for MCP clients (docs/mcp.md). The
	// protocol lives in package oauth; the consent page is here.
	// The metadata is also served at the path-suffixed addresses clients derive from the MCP
	// endpoint's URL (RFC 8414 §3.1, RFC 9728 §3.1).
	mux.Handle("GET /.well-known/oauth-authorization-server", s.OAuth.HandleMetadata())
	mux.Handle("GET /.well-known/oauth-authorization-server/api/mcp", s.OAuth.HandleMetadata())
	mux.Handle("GET /.well-known/oauth-protected-resource", s.OAuth.HandleResourceMetadata())
	mux.Handle("GET /.well-known/oauth-protected-resource/api/mcp", s.OAuth.HandleResourceMetadata())
	mux.Handle("POST /api/oauth/register", s.throttleOAuth(s.registerIP, s.OAuth.HandleRegister()))
	mux.Handle("POST /api/oauth/token", s.OAuth.HandleToken())
	mux.Handle("POST /api/oauth/revoke", s.throttleOAuth(s.revokeIP, s.OAuth.HandleRevoke()))
	mux.Handle("GET /oauth/authorize", s.withVisitor(s.handleAuthorize()))
	mux.Handle("POST /oauth/consent", s.requireUser(s.handleConsent()))
	mux.Handle("GET /docs/mcp", s.withVisitor(s.handleMCPDocs()))
	// CORS preflight, so browser-based MCP clients can read the documents and call the endpoints.
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/api/mcp",
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api/mcp",
		"/api/oauth/register", "/api/oauth/token", "/api/oauth/revoke"} {
		mux.Handle("OPTIONS "+path, s.OAuth.HandlePreflight())
	}

	// MCP server (docs/mcp.md): JSON-RPC over stateless Streamable HTTP for
	// AI clients, and the public client reports its generate_client_report tool links to (docs/monitoring.md,
	// "Client reports"). The protocol and the tools live in package mcp.
	mux.Handle("POST /api/mcp", s.sameOrigin(s.requireBearer(mcpBearer, s.handleMCP(s.MCP))))
	mux.Handle("GET /api/mcp", s.sameOrigin(s.requireBearer(mcpBearer, s.handleMCPMethodNotAllowed())))
	mux.Handle("DELETE /api/mcp", s.sameOrigin(s.requireBearer(mcpBearer, s.handleMCPMethodNotAllowed())))
	mux.Handle("GET /report/{token}", s.handleReport())
	mux.Handle("GET /report/{token}/images/{index}", s.handleReportImage())

	// The real-user beacon (docs/field.md "The beacon"): the script a site's pages load, the
	// same for every site, and the public ingest it sends to, keyed by the site's public id.
	mux.Handle("GET /beacon/v1.js", s.handleBeaconScript())
	mux.Handle("POST /api/beacon/{publicId}", s.handleBeacon())

	// Scan pipeline: the platform's publish webhook (interface "Events").
	mux.Handle("POST /api/webhooks/platform", s.handlePlatformWebhook())

	// Connecting sites from the platform (docs/webflow.md): the app install
	// (OAuth authorization code), the import page, disconnect.
	mux.Handle("GET /platform/connect", s.requireUser(s.handlePlatformConnect()))
	mux.Handle("GET /platform/callback", s.requireUser(s.handlePlatformCallback()))
	mux.Handle("GET /platform/import", s.requireUser(s.handlePlatformImportPage()))
	mux.Handle("POST /platform/import", s.requireUser(s.handlePlatformImport()))
	mux.Handle("POST /platform/disconnect", s.requireUser(s.handlePlatformDisconnect()))

	// Workspaces (docs/teams.md): members with roles, invitations, activity. onWorkspace names
	// the action each route takes in the workspace; the invitation link is the credential of
	// GET /invite/{token}, and accepting it needs the invited e-mail's session (and CSRF).
	mux.Handle("POST /workspaces", s.requireUser(s.handleCreateWorkspace()))
	mux.Handle("GET /workspaces/{workspaceId}", s.requireUser(s.onWorkspace(store.ActRead, s.handleWorkspace())))
	mux.Handle("POST /workspaces/{workspaceId}/invitations", s.requireUser(s.onWorkspace(store.ActManage, s.handleInvite())))
	mux.Handle("POST /workspaces/{workspaceId}/invitations/{invitationId}/revoke", s.requireUser(s.onWorkspace(store.ActManage, s.handleRevokeInvitation())))
	mux.Handle("POST /workspaces/{workspaceId}/members/{userId}", s.requireUser(s.onWorkspace(store.ActManage, s.handleSetRole())))
	mux.Handle("POST /workspaces/{workspaceId}/members/{userId}/remove", s.requireUser(s.onWorkspace(store.ActManage, s.handleRemoveMember())))
	mux.Handle("POST /workspaces/{workspaceId}/delete", s.requireUser(s.onWorkspace(store.ActDelete, s.handleDeleteWorkspace())))
	mux.Handle("POST /workspaces/{workspaceId}/leave", s.requireUser(s.onWorkspace(store.ActLeave, s.handleLeaveWorkspace())))
	mux.Handle("POST /workspaces/{workspaceId}/notifications", s.requireUser(s.onWorkspace(store.ActRead, s.handleMemberNotify())))
	mux.Handle("POST /workspaces/{workspaceId}/retention", s.requireUser(s.onWorkspace(store.ActManage, s.handleRetention())))
	// The workspace's alert channels (issue 21): every member reads the Notifications page,
	// owners and editors add, test and delete channels.
	mux.Handle("GET /workspaces/{workspaceId}/notifications", s.requireUser(s.onWorkspace(store.ActRead, s.handleNotificationsPage())))
	mux.Handle("POST /workspaces/{workspaceId}/channels", s.requireUser(s.onWorkspace(store.ActEdit, s.handleCreateChannel())))
	mux.Handle("POST /workspaces/{workspaceId}/channels/{channelId}/test", s.requireUser(s.onWorkspace(store.ActEdit, s.handleTestChannel())))
	mux.Handle("POST /workspaces/{workspaceId}/channels/{channelId}/delete", s.requireUser(s.onWorkspace(store.ActEdit, s.handleDeleteChannel())))
	// A workspace's single sign-on: every member reads it, owners verify a domain and require
	// it (sso_settings.go).
	mux.Handle("GET /workspaces/{workspaceId}/sso", s.requireUser(s.onWorkspace(store.ActRead, s.handleSSOSettings())))
	mux.Handle("POST /workspaces/{workspaceId}/sso/domain", s.requireUser(s.onWorkspace(store.ActManage, s.handleSSODomain())))
	mux.Handle("POST /workspaces/{workspaceId}/sso/verify", s.requireUser(s.onWorkspace(store.ActManage, s.handleSSOVerify())))
	mux.Handle("POST /workspaces/{workspaceId}/sso/require", s.requireUser(s.onWorkspace(store.ActManage, s.handleSSORequire())))
	mux.Handle("POST /workspaces/{workspaceId}/sso/provider", s.requireUser(s.onWorkspace(store.ActManage, s.handleSSOProviderSave())))
	mux.Handle("POST /workspaces/{workspaceId}/sso/provider/delete", s.requireUser(s.onWorkspace(store.ActManage, s.handleSSOProviderRemove())))
	// The workspace's audit log (docs/audit-log.md): its owners read, filter and export it.
	mux.Handle("GET /workspaces/{workspaceId}/audit-log", s.requireUser(s.onWorkspace(store.ActAudit, s.handleAuditLog())))
	mux.Handle("GET /workspaces/{workspaceId}/audit-log/export", s.requireUser(s.onWorkspace(store.ActAudit, s.handleAuditExport())))
	mux.Handle("GET /invite/{token}", s.withVisitor(s.handleInvitation()))
	mux.Handle("POST /invite/{token}", s.requireUser(s.handleAcceptInvitation()))

	// Runners (docs/runners.md): `sitepulse runner` leases audits with its runner token, keeps
	// each lease with heartbeats and posts the Lighthouse report (or the page's error); a token
	// revokes itself in one call. Owners make and revoke the workspace's tokens; owners and
	// editors name the locations a site is audited from.
	mux.Handle("POST /api/runner/leases", s.requireRunner(s.handleRunnerLease()))
	mux.Handle("POST /api/runner/leases/{leaseId}/heartbeat", s.requireRunner(s.handleRunnerHeartbeat()))
	mux.Handle("POST /api/runner/leases/{leaseId}/result", s.requireRunner(s.handleRunnerResult()))
	mux.Handle("POST /api/runner/revoke", s.requireRunner(s.handleRunnerRevoke()))
	mux.Handle("POST /workspaces/{workspaceId}/runners", s.requireUser(s.onWorkspace(store.ActManage, s.handleCreateRunnerToken())))
	mux.Handle("POST /workspaces/{workspaceId}/runners/{tokenId}/revoke", s.requireUser(s.onWorkspace(store.ActManage, s.handleRevokeRunnerToken())))
	mux.Handle("POST /sites/{siteId}/locations", s.requireUser(s.onSite(store.ActEdit, s.handleSetLocations())))

	// Budget check for CI and scan export (docs/ci.md, docs/api.md "Export").
	// The check takes API keys only, as requireBearer(apiKeyOnly) would, but verifies the key
	// itself in the same store round trip that reads the site (budget.go). The export takes the
	// session cookie only and answers 401 JSON rather than a login redirect.
	mux.Handle("POST /api/external/budget-check", s.handleBudgetCheck())
	// CI pipelines (docs/ci.md): start a scan as Scan now does (API keys
	// allowed to start scans), and follow it. The budget check above judges it, waiting for it.
	mux.Handle("POST /api/external/scans", s.requireBearer(apiKeyOnly, s.handleStartScan()))
	mux.Handle("GET /api/external/scans/{scanId}", s.requireBearer(apiKeyOnly, s.handleScanStatus()))
	mux.Handle("GET /api/sites/{siteId}/export", s.requireSession(s.handleExport()))

	// Web UI: sites, scans with live progress,
	// budgets and alert rules, client reports. Every page is workspace-scoped; every POST checks
	// CSRF. onSite names what each route does in the site's workspace (authorize.go): a viewer
	// reads, an editor or owner changes.
	mux.Handle("GET /{$}", s.requireUser(s.handleHome()))
	mux.Handle("GET /sites/new", s.requireUser(s.handleNewSite()))
	mux.Handle("POST /sites", s.requireUser(s.handleCreateSite()))
	mux.Handle("GET /sites/{siteId}", s.requireUser(s.onSite(store.ActRead, s.handleSite())))
	mux.Handle("GET /sites/{siteId}/edit", s.requireUser(s.onSite(store.ActEdit, s.handleEditSite())))
	mux.Handle("POST /sites/{siteId}", s.requireUser(s.onSite(store.ActEdit, s.handleUpdateSite())))
	mux.Handle("POST /sites/{siteId}/access", s.requireUser(s.onSite(store.ActEdit, s.handleSetAccess())))
	// The beacon added to (removed from) a platform site's custom code in one click.
	mux.Handle("POST /sites/{siteId}/beacon/install", s.requireUser(s.onSite(store.ActEdit, s.handleBeaconInstall())))
	mux.Handle("POST /sites/{siteId}/beacon/remove", s.requireUser(s.onSite(store.ActEdit, s.handleBeaconRemove())))
	mux.Handle("POST /sites/{siteId}/delete", s.requireUser(s.onSite(store.ActEdit, s.handleDeleteSite())))
	mux.Handle("POST /sites/{siteId}/scan", s.requireUser(s.onSite(store.ActEdit, s.handleScanNow())))
	mux.Handle("GET /sites/{siteId}/scans/{scanId}", s.requireUser(s.onSite(store.ActRead, s.handleScan())))
	// "Share a report": the store checks the role, as for the MCP tool (ActReport).
	mux.Handle("POST /sites/{siteId}/scans/{scanId}/reports", s.requireUser(s.onSite(store.ActRead, s.handleShareReport())))
	mux.Handle("GET /sites/{siteId}/scans/{scanId}/events", s.requireUser(s.onSite(store.ActRead, s.handleScanEvents())))
	mux.Handle("GET /sites/{siteId}/scans/{scanId}/page", s.requireUser(s.onSite(store.ActRead, s.handlePageDetail())))
	mux.Handle("GET /sites/{siteId}/scans/{scanId}/images/{index}", s.requireUser(s.onSite(store.ActRead, s.handleScanImage())))
	// What changed in a page between any two completed scans of the site (compare.go).
	mux.Handle("GET /sites/{siteId}/compare", s.requireUser(s.onSite(store.ActRead, s.handleCompare())))
	mux.Handle("GET /sites/{siteId}/budgets", s.requireUser(s.onSite(store.ActRead, s.handleBudgets())))
	mux.Handle("POST /sites/{siteId}/budgets", s.requireUser(s.onSite(store.ActEdit, s.handleSaveBudgets())))
	mux.Handle("POST /sites/{siteId}/alert-rules", s.requireUser(s.onSite(store.ActEdit, s.handleAddRule())))
	mux.Handle("POST /sites/{siteId}/alert-rules/{ruleId}/delete", s.requireUser(s.onSite(store.ActEdit, s.handleDeleteRule())))
	mux.Handle("GET /reports", s.requireUser(s.handleReports()))
	mux.Handle("POST /reports/{reportId}/revoke", s.requireUser(s.handleRevokeReport()))
}
