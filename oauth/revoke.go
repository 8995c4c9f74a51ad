package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"sitepulse/store"
)

// HandleRevoke is token revocation (RFC 7009). It answers 200 for any token, known or not,
// live or already revoked (§2.2), so it tells a caller nothing about the token. Revoking a
// refresh token revokes its whole family, access tokens included. When the request names a
// client, a token of another client is left alone (§2.1), still with 200; a confidential client
// must authenticate. token_type_hint is ignored: the token's own prefix says what it is. A
// request without a token is 400 invalid_request.
func (s *Server) HandleRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		allowAnyOrigin(w)
		if err := s.revoke(r); err != nil {
			s.writeErr(w, r, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

func (s *Server) revoke(r *http.Request) error {
	ctx := r.Context()
	form, err := readForm(r)
	if err != nil {
		return err
	}
	token, err := param(form, "token")
	if err != nil {
		return err
	}
	if token == "" {
		return badRequest(errInvalidRequest, "token is missing")
	}
	clientID := ""
	if len(form["client_id"]) > 0 || r.Header.Get("Authorization") != "" {
		c, err := s.authenticateClient(ctx, form, r.Header.Get("Authorization"))
		if err != nil {
			return err
		}
		clientID = c.ID
	}
	if !(strings.HasPrefix(token, prefixAccess) || strings.HasPrefix(token, prefixRefresh)) || len(token) > maxSecretLen {
		return nil
	}
	hash := store.HashSecret(token)
	t, err := s.store.Token(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case clientID != "" && t.ClientID != clientID:
		return nil
	}
	if err := s.store.RevokeToken(ctx, hash, s.now()); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	s.log.Info("oauth token revoked", "kind", t.Kind, "client", t.ClientID, "user", t.UserID)
	return nil
}
