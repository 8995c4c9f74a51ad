package handlers

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"
)

// signupClaim is what a sign-up link carries: the address whose holder may create an account
// by following it, and choose its password then. It is sealed (AES-256-GCM with a key derived
// from AUTH_KEY), so the link needs no row in the store; it carries no password, so whoever
// asked for it chooses nothing for the address's owner. It can be followed again until the
// account exists; then it answers that the address has an account.
type signupClaim struct {
	Email   string `json:"e"`
	Next    string `json:"n,omitempty"`
	Expires int64  `json:"x"` // Unix seconds
}

// signupExpired is openSignup's problem for a link past its 24 hours (410).
const signupExpired = "This sign-up link has expired: links work for 24 hours. Sign up again."

func (s *server) signupAEAD() cipher.AEAD {
	block, _ := aes.NewCipher(deriveKey(s.AuthKey, "signup link")) // 32 bytes: AES-256
	aead, _ := cipher.NewGCM(block)
	return aead
}

// sealSignup makes the token of a sign-up link.
func (s *server) sealSignup(c signupClaim) string {
	plain, _ := json.Marshal(c)
	aead := s.signupAEAD()
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte("signup")))
}

// openSignup reads a sign-up link's token; problem says why it cannot be used.
func (s *server) openSignup(token string) (signupClaim, string) {
	const invalid = "This sign-up link is not valid. Copy the whole link from the e-mail, or sign up again."
	var c signupClaim
	if len(token) > 2048 {
		return c, invalid
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	aead := s.signupAEAD()
	if err != nil || len(sealed) < aead.NonceSize() {
		return c, invalid
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte("signup"))
	if err != nil || json.Unmarshal(plain, &c) != nil {
		return c, invalid
	}
	if !s.Now().Before(time.Unix(c.Expires, 0)) {
		return c, signupExpired
	}
	return c, ""
}
