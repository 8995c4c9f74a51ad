package handlers

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"
)

// signupClaim is what a sign-up link carries: the account to create once the address's owner
// follows it. It is sealed (AES-256-GCM with a key derived from AUTH_KEY), so the link needs no
// row in the store and shows nothing, not even the password's hash, to whoever sees it.
type signupClaim struct {
	Email   string `json:"e"`
	Hash    string `json:"h"`
	Next    string `json:"n,omitempty"`
	Expires int64  `json:"x"` // Unix seconds
}

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
		return c, "This sign-up link has expired: links work for 24 hours. Sign up again."
	}
	return c, ""
}
