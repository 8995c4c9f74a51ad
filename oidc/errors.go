// Package oidc is SitePulse's OpenID Connect relying party, on the standard library's crypto:
// discovery, the authorization code flow with PKCE (S256), state and nonce, and ID tokens
// verified exactly (OpenID Connect Core 1.0 §3.1.3.7): the signature with a key the provider
// publishes in its JWKS (RS256/384/512, ES256/384; never "none" or a shared secret), iss, aud,
// azp, exp, iat, nonce and at_hash, within a bounded clock skew.
package oidc

import "fmt"

// Refusal is a sign-in the relying party refuses: Reason says why in words the person signing
// in (and their administrator) can act on. It holds no token or secret.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "single sign-on refused: " + r.Reason }

func refuse(format string, args ...any) error {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}
