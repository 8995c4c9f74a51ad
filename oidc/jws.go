package oidc

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"math/big"
	"strings"
)

// algs is the allow-list of signature algorithms: RSA PKCS#1 v1.5 and ECDSA on the NIST curves.
// "none" and the HMAC algorithms (HS256...) are never accepted: an ID token must be signed with
// a key the provider publishes, not with a secret the relying party also holds.
var algs = map[string]struct {
	kty   string
	crv   string // for EC
	size  int    // bytes of r and of s, for EC
	hash  crypto.Hash
	newFn func() hash.Hash
}{
	"RS256": {kty: "RSA", hash: crypto.SHA256, newFn: sha256.New},
	"RS384": {kty: "RSA", hash: crypto.SHA384, newFn: sha512.New384},
	"RS512": {kty: "RSA", hash: crypto.SHA512, newFn: sha512.New},
	"ES256": {kty: "EC", crv: "P-256", size: 32, hash: crypto.SHA256, newFn: sha256.New},
	"ES384": {kty: "EC", crv: "P-384", size: 48, hash: crypto.SHA384, newFn: sha512.New384},
}

// header is a JWS protected header.
type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Typ  string          `json:"typ"`
	Crit json.RawMessage `json:"crit"`
}

// jws is a JWS in compact form, split and decoded, not yet verified.
type jws struct {
	header    header
	signed    string // header.payload, the signing input
	payload   []byte
	signature []byte
}

// parseJWS splits a compact JWS. It refuses what is not three base64url parts, and any header
// it does not understand.
func parseJWS(token string) (jws, error) {
	if len(token) > 16<<10 {
		return jws{}, refuse("the ID token is too long")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return jws{}, refuse("the ID token is not a signed JWT (it has %d parts, not 3)", len(parts))
	}
	var t jws
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(h, &t.header) != nil {
		return jws{}, refuse("the ID token's header cannot be read")
	}
	if t.payload, err = base64.RawURLEncoding.DecodeString(parts[1]); err != nil {
		return jws{}, refuse("the ID token's claims cannot be read")
	}
	if t.signature, err = base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		return jws{}, refuse("the ID token's signature cannot be read")
	}
	if len(t.header.Crit) > 0 {
		return jws{}, refuse("the ID token names critical header parameters SitePulse does not know")
	}
	switch alg := t.header.Alg; {
	case strings.EqualFold(alg, "none"):
		return jws{}, refuse("the ID token is unsigned (alg \"none\"), which is never accepted")
	case strings.HasPrefix(strings.ToUpper(alg), "HS"):
		return jws{}, refuse("the ID token is signed with a shared secret (alg %q), which is never accepted: only the provider's published keys are", alg)
	default:
		if _, ok := algs[alg]; !ok {
			return jws{}, refuse("the ID token's signature algorithm %q is not one SitePulse accepts (RS256, RS384, RS512, ES256, ES384)", clip(alg))
		}
	}
	t.signed = parts[0] + "." + parts[1]
	return t, nil
}

// verify checks the signature with key, which must be of the algorithm's kind.
func (t jws) verify(key jwk) error {
	a := algs[t.header.Alg]
	if key.Alg != "" && key.Alg != t.header.Alg {
		return refuse("the ID token says alg %q but the provider's key %q is for %q", t.header.Alg, clip(key.Kid), clip(key.Alg))
	}
	if key.Kty != a.kty {
		return refuse("the ID token says alg %q but the provider's key %q is a %s key", t.header.Alg, clip(key.Kid), clip(key.Kty))
	}
	h := a.newFn()
	h.Write([]byte(t.signed))
	digest := h.Sum(nil)
	bad := refuse("the ID token's signature does not verify with the provider's key %q", clip(key.Kid))
	switch pub := key.pub.(type) {
	case *rsa.PublicKey:
		if rsa.VerifyPKCS1v15(pub, a.hash, digest, t.signature) != nil {
			return bad
		}
	case *ecdsa.PublicKey:
		if key.Crv != a.crv || len(t.signature) != 2*a.size {
			return bad
		}
		r := new(big.Int).SetBytes(t.signature[:a.size])
		s := new(big.Int).SetBytes(t.signature[a.size:])
		if !ecdsa.Verify(pub, digest, r, s) {
			return bad
		}
	default:
		return bad
	}
	return nil
}

// jwk is one key of a JWKS (RFC 7517), its public key decoded.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	pub crypto.PublicKey
}

// decode fills k.pub; false for a key SitePulse cannot or will not use (an encryption key, an
// RSA key under 2048 bits, a point off its curve).
func (k *jwk) decode() bool {
	if k.Use != "" && k.Use != "sig" {
		return false
	}
	b := func(s string) []byte { v, _ := base64.RawURLEncoding.DecodeString(s); return v }
	switch k.Kty {
	case "RSA":
		n, e := new(big.Int).SetBytes(b(k.N)), new(big.Int).SetBytes(b(k.E))
		if n.BitLen() < 2048 || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31 {
			return false
		}
		k.pub = &rsa.PublicKey{N: n, E: int(e.Int64())}
	case "EC":
		var curve elliptic.Curve
		switch k.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		default:
			return false
		}
		size := (curve.Params().BitSize + 7) / 8
		x, y := b(k.X), b(k.Y)
		if len(x) != size || len(y) != size {
			return false
		}
		// An uncompressed point 04|x|y, checked to be on the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return false
		}
		k.pub = pub
	default:
		return false
	}
	return true
}

// clip bounds a value the provider chose before it is shown on a page.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
