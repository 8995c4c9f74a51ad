package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"sitepulse/store"
)

// SSO event kinds: the security log's (store/securitylog_kinds.go). Every single sign-on event
// passes through ssoEvent, the one place the audit log takes them from.
const (
	ssoSignIn        = store.LogSSOSignIn
	ssoSignInRefused = store.LogSSOSignInFailed
	ssoLinked        = store.LogSSOIdentityLinked
	ssoJITJoin       = store.LogSSOJITJoin
	ssoVouchLost     = store.LogSSOVouchLost
	ssoSettings      = store.LogSSOSettingsChanged
	ssoDomainChecked = store.LogSSODomainVerified
	ssoCredRefused   = store.LogSSOCredentialRefused
)

// ssoEvent records a single sign-on event: who (attrs "user", "workspace"), what (kind and
// the other attrs), when and from where (the request's address and user agent; r may be nil
// for an event no request caused). It never takes a token or secret. It logs the event, and
// appends it to the security log: of the workspace named, else of every workspace of the user
// named; a refusal that names neither (no account yet) is logged only, as a wrong password
// for an unknown e-mail is.
func (s *server) ssoEvent(ctx context.Context, r *http.Request, kind string, attrs ...any) {
	args := append([]any{"kind", kind}, attrs...)
	if r != nil {
		args = append(args, "remote", clientIP(r), "user_agent", clipUA(r.UserAgent()))
	}
	s.Log.Log(ctx, slog.LevelInfo, "sso event", args...)

	var userID, workspaceID string
	details := map[string]string{}
	for i := 0; i+1 < len(attrs); i += 2 {
		key, _ := attrs[i].(string)
		val := fmt.Sprint(attrs[i+1])
		switch key {
		case "user":
			userID = val
		case "workspace":
			workspaceID = val
		case "":
		default:
			details[key] = val
		}
	}
	e := store.LogEvent{WorkspaceID: workspaceID, Kind: kind, ActorID: userID, Details: details}
	if v := visitorFrom(ctx); v != nil && v.User.ID == userID {
		e.ActorEmail = v.User.Email
	}
	switch {
	case workspaceID != "":
		s.Recorder.Record(ctx, e)
	case userID != "":
		s.Recorder.RecordAccount(ctx, e)
	}
}

func clipUA(ua string) string {
	if len(ua) > 200 {
		return ua[:200]
	}
	return ua
}
