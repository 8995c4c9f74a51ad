package store

// The kinds of security log lines: the one table of them (docs/audit-log.md lists the same).
// A line's kind must be one of these (LogEvent.Validate), so a typo cannot hide an event from
// a filter.
const (
	LogSignIn            = "auth.signin"
	LogSignInFailed      = "auth.signin_failed"
	LogSignOut           = "auth.signout"
	LogSignOutEverywhere = "auth.signout_everywhere"

	LogPasswordChanged  = "account.password_changed"
	LogPasswordReset    = "account.password_reset"
	LogRecoveryRequest  = "account.recovery_requested"
	LogEmailChanged     = "account.email_changed"
	LogAccountDeleted   = "account.deleted"
	LogWorkspaceCreated = "workspace.created"
	LogWorkspaceDeleted = "workspace.deleted"
	LogRetention        = "workspace.retention_changed"
	LogLegacy           = "workspace.change"

	LogRoleChanged   = "member.role_changed"
	LogMemberRemoved = "member.removed"
	LogMemberLeft    = "member.left"

	LogInvitationCreated  = "invitation.created"
	LogInvitationAccepted = "invitation.accepted"
	LogInvitationRevoked  = "invitation.revoked"

	LogAPIKeyCreated      = "api_key.created"
	LogAPIKeyRevoked      = "api_key.revoked"
	LogRunnerTokenCreated = "runner_token.created"
	LogRunnerTokenRevoked = "runner_token.revoked"
	LogAppGranted         = "app.granted"
	LogAppRevoked         = "app.revoked"

	LogSiteAdded     = "site.added"
	LogSiteChanged   = "site.changed"
	LogSiteDeleted   = "site.deleted"
	LogAccessSet     = "site.access_set"
	LogAccessRemoved = "site.access_removed"
	LogBudgetChanged = "budget.changed"
	LogRuleAdded     = "budget.rule_added"
	LogRuleDeleted   = "budget.rule_deleted"

	LogChannelCreated = "channel.created"
	LogChannelChanged = "channel.changed"
	LogChannelDeleted = "channel.deleted"

	LogExport        = "export.site"
	LogLogExported   = "export.audit_log"
	LogReportCreated = "report.created"
	LogReportRevoked = "report.revoked"

	LogPlatformConnected    = "platform.connected"
	LogPlatformDisconnected = "platform.disconnected"
	LogBeaconInstalled      = "platform.script_installed"
	LogBeaconRemoved        = "platform.script_removed"

	LogSSOSignIn            = "sso.signin"
	LogSSOSignInFailed      = "sso.signin_failed"
	LogSSOSettingsChanged   = "sso.settings_changed"
	LogSSODomainVerified    = "sso.domain_verified"
	LogSSOJITJoin           = "sso.jit_join"
	LogSSOVouchLost         = "sso.vouch_lost"
	LogSSOIdentityLinked    = "sso.identity_linked"
	LogSSOCredentialRefused = "sso.credential_refused"
)

// LogKinds says what each kind records, in the order the audit log page offers them.
var LogKinds = []struct{ Kind, Means string }{
	{LogSignIn, "a member signed in with e-mail and password (one line in each of their workspaces)"},
	{LogSignInFailed, "a wrong password for a member's account (one line in each of their workspaces)"},
	{LogSignOut, "a member signed out"},
	{LogSignOutEverywhere, "a member ended their other sessions"},
	{LogPasswordChanged, "a member changed their password in Settings"},
	{LogRecoveryRequest, "a password reset link was asked for a member's account"},
	{LogPasswordReset, "a member chose a new password through a reset link (account recovery)"},
	{LogEmailChanged, "a member's sign-in e-mail changed"},
	{LogAccountDeleted, "a member deleted their account"},
	{LogWorkspaceCreated, "the workspace was created"},
	{LogWorkspaceDeleted, "the workspace was deleted"},
	{LogRetention, "the workspace's retention of page details changed"},
	{LogRoleChanged, "a member's role changed"},
	{LogMemberRemoved, "a member was removed"},
	{LogMemberLeft, "a member left"},
	{LogInvitationCreated, "an invitation was made"},
	{LogInvitationAccepted, "an invitation was accepted"},
	{LogInvitationRevoked, "an invitation was revoked"},
	{LogAPIKeyCreated, "an API key was made"},
	{LogAPIKeyRevoked, "an API key was revoked"},
	{LogRunnerTokenCreated, "a runner token was made (docs/runners.md)"},
	{LogRunnerTokenRevoked, "a runner token was revoked: its runners stop at their next call"},
	{LogAppGranted, "a member granted a connected app (OAuth/MCP client) access"},
	{LogAppRevoked, "a member revoked a connected app"},
	{LogSiteAdded, "a site was added"},
	{LogSiteChanged, "a site's settings changed"},
	{LogSiteDeleted, "a site was deleted"},
	{LogAccessSet, "a site's private-page sign-in was set"},
	{LogAccessRemoved, "a site's private-page sign-in was removed"},
	{LogBudgetChanged, "a site's budgets changed"},
	{LogRuleAdded, "an alert rule was added"},
	{LogRuleDeleted, "an alert rule was deleted"},
	{LogChannelCreated, "an alert channel was made"},
	{LogChannelChanged, "an alert channel was changed"},
	{LogChannelDeleted, "an alert channel was deleted"},
	{LogExport, "a site's results were exported"},
	{LogLogExported, "this audit log was exported"},
	{LogReportCreated, "a client report link was made"},
	{LogReportRevoked, "a client report link was revoked"},
	{LogPlatformConnected, "the site-builder platform was connected"},
	{LogPlatformDisconnected, "the site-builder platform was disconnected"},
	{LogBeaconInstalled, "the beacon script was added to a site's custom code on the platform"},
	{LogBeaconRemoved, "the beacon script was removed from a site's custom code on the platform"},
	{LogSSOSignIn, "a member signed in through the identity provider"},
	{LogSSOSignInFailed, "a sign-in through the identity provider was refused"},
	{LogSSOSettingsChanged, "the workspace's single sign-on settings changed"},
	{LogSSODomainVerified, "a domain was verified for single sign-on"},
	{LogSSOJITJoin, "a person joined on first sign-in through the identity provider"},
	{LogSSOVouchLost, "the identity provider stopped vouching for a member: their sessions ended"},
	{LogSSOIdentityLinked, "an identity at the provider was linked to an existing account (its verified e-mail, in a verified domain)"},
	{LogSSOCredentialRefused, "a password session, API key or OAuth token was refused by the workspace's single sign-on rule"},
	{LogLegacy, "a change recorded before the audit log (migrated from the activity list)"},
}

// KnownLogKind answers whether kind is one of LogKinds.
func KnownLogKind(kind string) bool {
	for _, k := range LogKinds {
		if k.Kind == kind {
			return true
		}
	}
	return false
}
