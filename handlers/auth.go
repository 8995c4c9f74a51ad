package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"sitepulse/store"
)

// AccessTokens verifies OAuth access tokens (at_...): what /api/mcp needs of the OAuth server.
type AccessTokens interface {
	// VerifyAccessToken returns the user and granted scope of a valid, unexpired, unrevoked
	// access token, and store.ErrNotFound for any other token.
	VerifyAccessToken(ctx context.Context, token string) (userID, scope string, err error)
}

// Bearer credential prefixes (interface "Credentials").
const (
	prefixAPIKey = "svc_"
	maxBearerLen = 200 // a longer token is never looked up
)

// bearerPolicy says which credentials a route takes and how its 401 reads.
type bearerPolicy struct {
	accessTokens bool // OAuth access tokens are accepted besides API keys
	// resourceMetadata makes 401s point at the protected-resource metadata (RFC 9728), as the
	// MCP endpoint must so clients can discover the authorization server.
	resourceMetadata bool
}

var (
	apiKeyOnly = bearerPolicy{}
	mcpBearer  = bearerPolicy{accessTokens: true, resourceMetadata: true}
)

// bearerToken returns the token of an "Authorization: Bearer" header, or "". Tokens in the query
// string are never read.
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return ""
	}
	return strings.TrimSpace(h[len(scheme):])
}

// requireBearer authenticates a request by its bearer credential and puts the user's id and the
// credential's scope in the context (store.UserIDFrom, store.ScopeFrom). Without credentials the
// answer is 401 with a bare challenge; with a bad, expired, revoked or unaccepted one, 401 with
// error="invalid_token".
func (s *server) requireBearer(p bearerPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := bearerToken(r)
		if token == "" {
			s.unauthorized(w, p, "", "missing bearer token: send Authorization: Bearer <key>")
			return
		}
		principal, scope, err := s.authenticate(r, p, token)
		if err != nil {
			s.bearerFailure(w, r, p, err)
			return
		}
		ctx := store.WithPrincipalScope(r.Context(), principal, scope)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authenticate is verifyBearer and then the single sign-on rule of the credential's workspace
// (bearerGate): every route that takes a bearer credential, through requireBearer or on its own,
// passes here, so none can skip the rule.
func (s *server) authenticate(r *http.Request, p bearerPolicy, token string) (store.Principal, string, error) {
	principal, scope, err := s.verifyBearer(r.Context(), p, token)
	if err == nil {
		err = s.bearerGate(r, principal, token)
	}
	return principal, scope, err
}

// keyInputsGate is the single sign-on rule for the budget check's plain forms, which find their
// key and their inputs in one store call (store.BudgetInputsByKey) instead of authenticate: the
// key's workspace rule, one more read on a server with single sign-on.
func (s *server) keyInputsGate(r *http.Request, token string) error {
	if !s.ssoOn(r.Context()) {
		return nil
	}
	k, err := s.Auth.APIKeyByHash(r.Context(), store.HashSecret(token), s.Now())
	if err != nil {
		return err
	}
	return s.bearerGate(r, store.Principal{UserID: k.UserID, KeyWorkspaceID: k.WorkspaceID}, token)
}

// verifyBearer finds the principal and scope of a token by its prefix: an API key acts for its
// workspace only, an access token as its user. Each kind is looked up by its hash only; a
// token of the wrong kind for the route is simply not found. A credential stored without a
// scope may read: reading is what every credential could always do.
func (s *server) verifyBearer(ctx context.Context, p bearerPolicy, token string) (principal store.Principal, scope string, err error) {
	switch {
	case isAPIKey(token):
		k, err := s.Auth.APIKeyByHash(ctx, store.HashSecret(token), s.Now())
		if err != nil {
			return store.Principal{}, "", err
		}
		scope = k.Scope
		if scope == "" {
			scope = store.ScopeRead
		}
		return store.Principal{UserID: k.UserID, KeyWorkspaceID: k.WorkspaceID, KeyPublish: store.HasScope(scope, store.ScopeWrite)}, scope, nil
	case p.accessTokens && len(token) <= maxBearerLen:
		var userID string
		userID, scope, err = s.tokens.VerifyAccessToken(ctx, token) // it refuses what is not an access token
		if err != nil {
			return store.Principal{}, "", err
		}
		if scope == "" {
			scope = store.ScopeRead
		}
		return store.Principal{UserID: userID}, scope, nil
	}
	return store.Principal{}, "", store.ErrNotFound
}

// isAPIKey says whether a token has an API key's shape: the prefix and at most maxBearerLen bytes.
func isAPIKey(token string) bool {
	return strings.HasPrefix(token, prefixAPIKey) && len(token) <= maxBearerLen
}

// bearerFailure answers a failed verifyBearer: an unknown credential (store.ErrNotFound) is a
// 401 invalid_token, anything else a 500.
func (s *server) bearerFailure(w http.ResponseWriter, r *http.Request, p bearerPolicy, err error) {
	var sso *ssoRequiredError
	if errors.As(err, &sso) {
		writeError(w, http.StatusForbidden, sso.why)
		return
	}
	if !errors.Is(err, store.ErrNotFound) {
		s.error(w, r, err, "")
		return
	}
	msg := "invalid or revoked API key"
	if p.accessTokens {
		msg = "invalid, expired or revoked token"
	}
	s.unauthorized(w, p, "invalid_token", msg)
}

// unauthorized writes a 401 with its WWW-Authenticate challenge (RFC 6750 §3, RFC 9728 §5.1).
// The MCP endpoint's names the scope to ask for first, mcp:read: a client asks for mcp:write
// when a tool needs it (insufficientScope), so a token can do no more than the user needed.
func (s *server) unauthorized(w http.ResponseWriter, p bearerPolicy, code, message string) {
	challenge := `Bearer realm="sitepulse"`
	if code != "" {
		challenge += `, error="` + code + `"`
	}
	if p.resourceMetadata {
		challenge += `, resource_metadata="` + s.resourceMetadataURL() + `", scope="` + store.ScopeRead + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, message)
}

func (s *server) resourceMetadataURL() string {
	return s.BaseURL + "/.well-known/oauth-protected-resource"
}

// insufficientScope is the challenge of a 403 from the MCP endpoint: the credential is valid
// but may not make the call (RFC 6750 §3.1). It names every scope, the ones the client holds
// and mcp:write, so the client can step up by authorizing again with them (MCP 2025-11-25
// authorization, "Scope challenge handling").
func (s *server) insufficientScope(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+store.ScopeAll+`", resource_metadata="`+s.resourceMetadataURL()+`"`)
}
