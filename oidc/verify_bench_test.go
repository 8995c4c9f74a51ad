package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"sitepulse/oidc/oidctest"
)

// BenchmarkVerifyIDToken is the cost of verifying one ID token (signature and claims) with its
// key cached, per algorithm: what a sign-in adds to the provider's round trips.
func BenchmarkVerifyIDToken(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	enc := func(v any) string { j, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(j) }
	claims := enc(map[string]any{"iss": "https://idp.example", "sub": "s", "aud": "c", "exp": now.Add(time.Minute).Unix(), "iat": now.Unix(), "nonce": "n"})
	x, y := make([]byte, 32), make([]byte, 32)
	ek.X.FillBytes(x)
	ek.Y.FillBytes(y)
	b64 := base64.RawURLEncoding.EncodeToString
	keys := []jwk{{Kty: "RSA", Kid: "r", N: b64(rk.N.Bytes()), E: b64(big.NewInt(int64(rk.E)).Bytes())}, {Kty: "EC", Kid: "e", Crv: "P-256", X: b64(x), Y: b64(y)}}
	for i := range keys {
		if !keys[i].decode() {
			b.Fatal("key")
		}
	}
	c := New(Config{Issuer: "https://idp.example", ClientID: "c", Now: func() time.Time { return now }})
	ks := &keySet{keys: keys, fetchedAt: now, now: c.cfg.Now}
	for _, tc := range []struct {
		alg, kid string
		key      any
	}{{"RS256", "r", rk}, {"ES256", "e", ek}} {
		input := enc(map[string]string{"alg": tc.alg, "kid": tc.kid}) + "." + claims
		var sig []byte
		switch k := tc.key.(type) {
		case *rsa.PrivateKey:
			sig = oidctest.Sign(k, input)
		case *ecdsa.PrivateKey:
			sig = oidctest.Sign(k, input)
		}
		token := input + "." + b64(sig)
		b.Run(tc.alg, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.verify(context.Background(), ks, token, "n", ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
