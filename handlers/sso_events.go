package handlers

import (
	"context"
	"log/slog"
	"net/http"
)

// SSO event kinds: every single sign-on event passes through ssoEvent, the one place the
// audit log takes them from.
const (
	ssoSignIn        = "sso.sign_in"
	ssoSignInRefused = "sso.sign_in_refused"
	ssoLinked        = "sso.identity_linked"
	ssoJITJoin       = "sso.jit_join"
	ssoVouchLost     = "sso.vouch_lost"
	ssoSettings      = "sso.settings_changed"
	ssoDomainChecked = "sso.domain_verified"
	ssoCredRefused   = "sso.credential_refused"
)

// ssoEvent records a single sign-on event: who (attrs "user", "workspace"), what (kind and
// attrs), when and from where (the request's address and user agent; r may be nil for an event
// no request caused). It never takes a token or secret. For now it logs; the audit log takes
// its events from here.
func (s *server) ssoEvent(ctx context.Context, r *http.Request, kind string, attrs ...any) {
	args := append([]any{"kind", kind}, attrs...)
	if r != nil {
		args = append(args, "remote", clientIP(r), "user_agent", clipUA(r.UserAgent()))
	}
	s.Log.Log(ctx, slog.LevelInfo, "sso event", args...)
}

func clipUA(ua string) string {
	if len(ua) > 200 {
		return ua[:200]
	}
	return ua
}
