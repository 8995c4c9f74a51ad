package oauth

import (
	"context"
	"fmt"
	"strings"

	"sitepulse/store"
)

// VerifyAccessToken returns the user and the granted scope of a valid access token: issued
// here, unexpired (30 days) and unrevoked. Any other token is store.ErrNotFound. It implements
// handlers.AccessTokens for the MCP endpoint.
func (s *Server) VerifyAccessToken(ctx context.Context, token string) (userID, scope string, err error) {
	if !strings.HasPrefix(token, prefixAccess) || len(token) > maxSecretLen {
		return "", "", fmt.Errorf("access token: %w", store.ErrNotFound)
	}
	t, err := s.store.Token(ctx, store.HashSecret(token))
	if err != nil {
		return "", "", err
	}
	if t.Kind != store.TokenAccess || t.RevokedAt != nil || s.now().After(t.ExpiresAt) {
		return "", "", fmt.Errorf("access token: %w", store.ErrNotFound)
	}
	return t.UserID, t.Scope, nil
}
