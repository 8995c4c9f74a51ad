package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// validVerifier answers whether v is a PKCE code_verifier: 43 to 128 characters of
// [A-Za-z0-9-._~] (RFC 7636 §4.1).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !unreserved(v[i]) {
			return false
		}
	}
	return true
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// validChallenge answers whether c can be an S256 code_challenge: the unpadded base64url of a
// SHA-256 digest, 43 characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// pkceMatches compares base64url(SHA-256(verifier)) with the stored challenge in constant time
// (interface, Authentication rule 3).
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
