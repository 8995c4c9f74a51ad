package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"sitepulse/store"
)

// tokenResponse is RFC 6749 §5.1's successful response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// HandleToken is the token endpoint: the authorization_code and refresh_token grants, answered
// with no-store. Errors are 400 (invalid_request, invalid_grant, invalid_client for an unknown
// client, invalid_target, invalid_scope, unauthorized_client, unsupported_grant_type), 401
// invalid_client for a missing or wrong client secret, 413 for an oversized body.
func (s *Server) HandleToken() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		allowAnyOrigin(w)
		resp, err := s.token(r)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, resp)
	})
}

func (s *Server) token(r *http.Request) (tokenResponse, error) {
	form, err := readForm(r)
	if err != nil {
		return tokenResponse{}, err
	}
	grant, err := param(form, "grant_type")
	if err != nil {
		return tokenResponse{}, err
	}
	switch grant {
	case "":
		return tokenResponse{}, badRequest(errInvalidRequest, "grant_type is missing")
	case grantCode:
		return s.exchangeCode(r.Context(), form, r.Header.Get("Authorization"))
	case grantRefresh:
		return s.refresh(r.Context(), form, r.Header.Get("Authorization"))
	}
	return tokenResponse{}, badRequest(errUnsupportedGrantType, "grant_type must be authorization_code or refresh_token")
}

// authenticateClient finds the client of a token or revocation request. Public clients name
// themselves; confidential ones prove it with client_secret_post (the secret in the body) or
// client_secret_basic (HTTP Basic in the Authorization header, RFC 6749 §2.3.1), either one,
// never both; the secret is compared by hash in constant time.
func (s *Server) authenticateClient(ctx context.Context, form url.Values, authorization string) (store.OAuthClient, error) {
	vals, err := params(form, "client_id", "client_secret")
	if err != nil {
		return store.OAuthClient{}, err
	}
	id, secret := vals[0], vals[1]
	basic := false
	if authorization != "" {
		bid, bsecret, err := basicCredentials(authorization)
		switch {
		case err != nil:
			return store.OAuthClient{}, err
		case secret != "":
			return store.OAuthClient{}, badRequest(errInvalidRequest, "send the client secret once: in the Authorization header or in the body, not both")
		case id != "" && id != bid:
			return store.OAuthClient{}, badRequest(errInvalidRequest, "client_id in the body differs from the one in the Authorization header")
		}
		id, secret, basic = bid, bsecret, true
	}
	if id == "" {
		return store.OAuthClient{}, badRequest(errInvalidRequest, "client_id is missing")
	}
	unknown := badRequest(errInvalidClient, "the client_id is not registered here")
	if !ValidClientID(id) && !store.IsMetadataClientID(id) {
		return store.OAuthClient{}, unknown
	}
	c, err := s.store.Client(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.OAuthClient{}, unknown
	case err != nil:
		return store.OAuthClient{}, err
	}
	if c.SecretHash == "" {
		return c, nil
	}
	bad := &Error{Status: http.StatusUnauthorized, Code: errInvalidClient, Description: "client authentication failed: send the client_secret issued at registration (client_secret_post or client_secret_basic)", basic: basic}
	if secret == "" || len(secret) > maxSecretLen {
		return store.OAuthClient{}, bad
	}
	if subtle.ConstantTimeCompare([]byte(store.HashSecret(secret)), []byte(c.SecretHash)) != 1 {
		return store.OAuthClient{}, bad
	}
	return c, nil
}

// basicCredentials decodes "Authorization: Basic ...": base64 of the form-urlencoded client id
// and secret joined by a colon (RFC 6749 §2.3.1). Anything else is invalid_request.
func basicCredentials(authorization string) (id, secret string, err error) {
	const scheme = "basic "
	if len(authorization) <= len(scheme) || !strings.EqualFold(authorization[:len(scheme)], scheme) || len(authorization) > 4*maxSecretLen {
		return "", "", badRequest(errInvalidRequest, "the Authorization header must be HTTP Basic client credentials")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(authorization[len(scheme):]))
	if err != nil {
		return "", "", badRequest(errInvalidRequest, "the Basic credentials are not base64")
	}
	rawID, rawSecret, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", badRequest(errInvalidRequest, "the Basic credentials must be client_id:client_secret")
	}
	if id, err = url.QueryUnescape(rawID); err == nil {
		secret, err = url.QueryUnescape(rawSecret)
	}
	if err != nil {
		return "", "", badRequest(errInvalidRequest, "the Basic credentials must be form-urlencoded before base64 (RFC 6749 §2.3.1)")
	}
	return id, secret, nil
}

// exchangeCode is the authorization_code grant. A code is redeemed once: a later redemption
// that passes every check (same client, redirect_uri and verifier), and the losers of
// concurrent ones, get invalid_grant and revoke every token issued from the code (RFC 6749
// §4.1.2, RFC 9700 §4.5): the code leaked somewhere, and its tokens may be in a thief's hands.
// A replay that fails a check (another client, a wrong verifier) revokes nothing, or anyone
// could end a grant by guessing at it (OAuth 2.1 §7.5.3).
func (s *Server) exchangeCode(ctx context.Context, form url.Values, authorization string) (tokenResponse, error) {
	vals, err := params(form, "code", "redirect_uri", "code_verifier")
	if err != nil {
		return tokenResponse{}, err
	}
	code, redirectURI, verifier := vals[0], vals[1], vals[2]
	switch {
	case code == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "code is missing")
	case redirectURI == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "redirect_uri is missing")
	case verifier == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "code_verifier is missing (PKCE is required)")
	}
	client, err := s.authenticateClient(ctx, form, authorization)
	if err != nil {
		return tokenResponse{}, err
	}
	if !validVerifier(verifier) {
		return tokenResponse{}, badRequest(errInvalidRequest, "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	}
	if err := s.checkResource(form["resource"]); err != nil {
		return tokenResponse{}, err
	}
	invalid := badRequest(errInvalidGrant, "the code is unknown, expired or already used")
	if !strings.HasPrefix(code, prefixCode) || len(code) > maxSecretLen {
		return tokenResponse{}, invalid
	}
	hash := store.HashSecret(code)
	ac, err := s.store.Code(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return tokenResponse{}, invalid
	case err != nil:
		return tokenResponse{}, err
	case ac.ClientID != client.ID:
		return tokenResponse{}, badRequest(errInvalidGrant, "the code was issued to another client")
	case ac.RedirectURI != redirectURI:
		return tokenResponse{}, badRequest(errInvalidGrant, "redirect_uri does not match the authorization request")
	case !pkceMatches(verifier, ac.CodeChallenge):
		return tokenResponse{}, badRequest(errInvalidGrant, "code_verifier does not match the code_challenge")
	}
	now := s.now()
	if ac.UsedAt != nil {
		return tokenResponse{}, s.reused(ctx, "authorization code", ac.ClientID, ac.FamilyID, now)
	}
	if now.After(ac.ExpiresAt) {
		return tokenResponse{}, badRequest(errInvalidGrant, "the code expired: codes live 10 minutes")
	}
	resp, tokens := s.issue(client, ac.UserID, ac.FamilyID, ac.Scope, now)
	switch err := s.store.RedeemCode(ctx, hash, now, tokens...); {
	case errors.Is(err, store.ErrConflict):
		return tokenResponse{}, s.reused(ctx, "authorization code", ac.ClientID, ac.FamilyID, now)
	case errors.Is(err, store.ErrNotFound):
		return tokenResponse{}, invalid
	case err != nil:
		return tokenResponse{}, fmt.Errorf("redeem code: %w", err)
	}
	return resp, nil
}

// refresh is the refresh_token grant with rotation: the presented token is used up and a new
// access and refresh token replace it. A used refresh token presented again means one of its
// holders is a thief, so the whole family is revoked.
func (s *Server) refresh(ctx context.Context, form url.Values, authorization string) (tokenResponse, error) {
	vals, err := params(form, "refresh_token", "scope")
	if err != nil {
		return tokenResponse{}, err
	}
	presented, scope := vals[0], vals[1]
	if presented == "" {
		return tokenResponse{}, badRequest(errInvalidRequest, "refresh_token is missing")
	}
	client, err := s.authenticateClient(ctx, form, authorization)
	if err != nil {
		return tokenResponse{}, err
	}
	if err := s.checkResource(form["resource"]); err != nil {
		return tokenResponse{}, err
	}
	invalid := badRequest(errInvalidGrant, "the refresh token is unknown, expired or revoked")
	if !strings.HasPrefix(presented, prefixRefresh) || len(presented) > maxSecretLen {
		return tokenResponse{}, invalid
	}
	hash := store.HashSecret(presented)
	old, err := s.store.Token(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return tokenResponse{}, invalid
	case err != nil:
		return tokenResponse{}, err
	case old.Kind != store.TokenRefresh:
		return tokenResponse{}, invalid
	case old.ClientID != client.ID:
		return tokenResponse{}, badRequest(errInvalidGrant, "the refresh token was issued to another client")
	case !slices.Contains(client.GrantTypes, grantRefresh):
		return tokenResponse{}, badRequest(errUnauthorizedClient, "this client did not register the refresh_token grant")
	case old.RevokedAt != nil:
		return tokenResponse{}, invalid
	}
	now := s.now()
	if old.UsedAt != nil {
		return tokenResponse{}, s.reused(ctx, "refresh token", old.ClientID, old.FamilyID, now)
	}
	if now.After(old.ExpiresAt) {
		return tokenResponse{}, badRequest(errInvalidGrant, "the refresh token expired: refresh tokens live 90 days")
	}
	granted, err := narrowScope(old.Scope, scope)
	if err != nil {
		return tokenResponse{}, err
	}
	resp, tokens := s.issue(client, old.UserID, old.FamilyID, granted, now)
	switch err := s.store.RotateRefresh(ctx, hash, now, tokens...); {
	case errors.Is(err, store.ErrConflict):
		return tokenResponse{}, s.reused(ctx, "refresh token", old.ClientID, old.FamilyID, now)
	case errors.Is(err, store.ErrNotFound):
		return tokenResponse{}, invalid
	case err != nil:
		return tokenResponse{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	return resp, nil
}

// reused revokes every token of a grant whose code or refresh token was presented a second
// time (OAuth 2.1 §4.1.3, §4.3.1) and answers invalid_grant.
func (s *Server) reused(ctx context.Context, what, clientID, familyID string, now time.Time) error {
	s.log.Warn(what+" reused: revoking every token of its grant", "client", clientID, "family", familyID)
	if err := s.store.RevokeFamily(ctx, familyID, now); err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	return badRequest(errInvalidGrant, "the "+what+" was already used; every token issued from it is now revoked")
}

// issue makes an access token and, for a client registered for refresh, a refresh token of a
// grant's family.
func (s *Server) issue(c store.OAuthClient, userID, familyID, scope string, now time.Time) (tokenResponse, []store.OAuthToken) {
	at, atHash := store.NewSecret(prefixAccess)
	resp := tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(AccessTokenTTL / time.Second), Scope: scope}
	tokens := []store.OAuthToken{{TokenHash: atHash, Kind: store.TokenAccess, ClientID: c.ID, UserID: userID, FamilyID: familyID,
		Scope: scope, CreatedAt: now, ExpiresAt: now.Add(AccessTokenTTL)}}
	if slices.Contains(c.GrantTypes, grantRefresh) {
		rt, rtHash := store.NewSecret(prefixRefresh)
		resp.RefreshToken = rt
		tokens = append(tokens, store.OAuthToken{TokenHash: rtHash, Kind: store.TokenRefresh, ClientID: c.ID, UserID: userID,
			FamilyID: familyID, Scope: scope, CreatedAt: now, ExpiresAt: now.Add(RefreshTokenTTL)})
	}
	return resp, tokens
}
