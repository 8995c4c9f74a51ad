// Package oidctest is an OpenID provider double for tests, on the standard library: discovery,
// authorize, token (PKCE checked, codes single-use), userinfo and JWKS, with an RSA and an EC
// key. Fault makes it serve each kind of wrong ID token a hostile or broken provider could.
package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Faults: what is wrong with the ID token the provider returns ("" is nothing).
const (
	FaultBadSignature = "bad signature"
	FaultAlgNone      = "alg none"
	FaultHS256        = "HS256 signed with the public key"
	FaultWrongIssuer  = "wrong iss"
	FaultWrongAud     = "wrong aud"
	FaultAzp          = "several audiences, azp another's"
	FaultWrongNonce   = "wrong nonce"
	FaultExpired      = "expired"
	FaultFutureIat    = "issued in the future"
	FaultUnknownKid   = "a kid it does not publish"
	FaultJWKSChanged  = "its JWKS changes under the same kid"
	FaultAtHash       = "at_hash of another access token"
	FaultES256        = "ES256 (valid)"
	FaultRotated      = "rotated to a new key (valid)"
)

// WrongTokens lists every fault that makes the ID token wrong, with what the refusal of it
// says (oidc.Refusal's reason): the relying party's tests (oidc) and the sign-in page's
// (handlers) walk the same list.
var WrongTokens = []struct{ Fault, Reason string }{
	{FaultBadSignature, "signature does not verify"},
	{FaultAlgNone, `unsigned (alg "none")`},
	{FaultHS256, "signed with a shared secret"},
	{FaultWrongIssuer, "not by the configured issuer"},
	{FaultWrongAud, "for another client"},
	{FaultAzp, "issued to another party"},
	{FaultWrongNonce, "nonce is not the one this sign-in sent"},
	{FaultExpired, "expired at"},
	{FaultFutureIat, "issued in the future"},
	{FaultAtHash, "at_hash does not match"},
	{FaultUnknownKid, `key id "never-published", which the provider does not publish`},
	{FaultJWKSChanged, "signature does not verify"},
}

// Provider is the double. Set its fields before a sign-in; they are read under its lock.
type Provider struct {
	*httptest.Server
	Issuer       string
	ClientID     string
	ClientSecret string
	Now          func() time.Time

	mu        sync.Mutex
	Fault     string
	Subject   string
	Email     string
	Verified  bool
	Refuse    bool // refresh grants are refused (the person was disabled)
	Down      bool // the token endpoint answers 503
	rsaKey    *rsa.PrivateKey
	ecKey     *ecdsa.PrivateKey
	newKey    *rsa.PrivateKey // published after FaultRotated
	rotated   bool
	changed   bool
	codes     map[string]grant
	refreshes map[string]string // refresh token -> subject
	JWKSHits  int
}

type grant struct{ nonce, challenge, redirect string }

// New starts a provider on 127.0.0.1 that knows one client.
func New(t testing.TB, clientID, secret string) *Provider {
	p := &Provider{ClientID: clientID, ClientSecret: secret, Now: time.Now, Subject: "sub-1", Email: "pat@example.com", Verified: true,
		codes: map[string]grant{}, refreshes: map[string]string{}}
	var err error
	if p.rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.newKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /userinfo", p.userinfo)
	p.Server = httptest.NewServer(mux)
	p.Issuer = p.Server.URL
	t.Cleanup(p.Server.Close)
	return p
}

// Set changes the provider's behaviour under its lock.
func (p *Provider) Set(f func(p *Provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// Hits is how many times the JWKS was fetched.
func (p *Provider) Hits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.JWKSHits
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	json.NewEncoder(w).Encode(map[string]any{
		"issuer": p.Issuer, "authorization_endpoint": p.Issuer + "/authorize", "token_endpoint": p.Issuer + "/token",
		"jwks_uri": p.Issuer + "/jwks", "userinfo_endpoint": p.Issuer + "/userinfo",
		"code_challenge_methods_supported": []string{"S256"}, "id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
	})
}

// authorize signs the person in at once and returns a code.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := random()
	p.mu.Lock()
	p.codes[code] = grant{nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	p.mu.Unlock()
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, _ := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	if id != p.ClientID || secret != p.ClientSecret {
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	r.ParseForm()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Down {
		tokenError(w, http.StatusServiceUnavailable, "temporarily_unavailable")
		return
	}
	var sub, nonce string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code")) // single use: a replayed code is refused
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || g.challenge != base64.RawURLEncoding.EncodeToString(sum[:]) || g.redirect != r.PostForm.Get("redirect_uri") {
			tokenError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		sub, nonce = p.Subject, g.nonce
	case "refresh_token":
		s, ok := p.refreshes[r.PostForm.Get("refresh_token")]
		if !ok || p.Refuse {
			tokenError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		delete(p.refreshes, r.PostForm.Get("refresh_token"))
		sub = s
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access, refresh := random(), random()
	p.refreshes[refresh] = sub
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "expires_in": 300}
	if nonce != "" || r.PostForm.Get("grant_type") == "authorization_code" {
		resp["id_token"] = p.idToken(sub, nonce, access)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func tokenError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// idToken mints the ID token of the current Fault. Called with p.mu held.
func (p *Provider) idToken(sub, nonce, access string) string {
	now := p.Now()
	claims := map[string]any{"iss": p.Issuer, "sub": sub, "aud": p.ClientID, "exp": now.Add(5 * time.Minute).Unix(),
		"iat": now.Unix(), "nonce": nonce, "email": p.Email, "email_verified": p.Verified}
	h := sha256.Sum256([]byte(access))
	claims["at_hash"] = base64.RawURLEncoding.EncodeToString(h[:16])
	hdr := map[string]any{"alg": "RS256", "kid": "rsa-1", "typ": "JWT"}
	key := crypto.Signer(p.rsaKey)
	p.changed = false // the JWKS changes for that fault's sign-in only
	switch p.Fault {
	case FaultWrongIssuer:
		claims["iss"] = "https://evil.example"
	case FaultWrongAud:
		claims["aud"] = "another-client"
	case FaultAzp:
		claims["aud"], claims["azp"] = []string{p.ClientID, "another-client"}, "another-client"
	case FaultWrongNonce:
		claims["nonce"] = "a-nonce-of-another-sign-in"
	case FaultExpired:
		claims["exp"], claims["iat"] = now.Add(-10*time.Minute).Unix(), now.Add(-11*time.Minute).Unix()
	case FaultFutureIat:
		claims["iat"] = now.Add(time.Hour).Unix()
	case FaultAtHash:
		o := sha256.Sum256([]byte("another access token"))
		claims["at_hash"] = base64.RawURLEncoding.EncodeToString(o[:16])
	case FaultUnknownKid:
		hdr["kid"] = "never-published"
	case FaultES256:
		hdr["alg"], hdr["kid"], key = "ES256", "ec-1", p.ecKey
	case FaultRotated:
		p.rotated = true
		hdr["kid"], key = "rsa-2", p.newKey
	case FaultJWKSChanged:
		p.changed = true // the JWKS now publishes another key under kid rsa-1
	}
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	switch p.Fault {
	case FaultAlgNone:
		hdr["alg"] = "none"
		return enc(hdr) + "." + enc(claims) + "."
	case FaultHS256:
		hdr["alg"] = "HS256"
		input := enc(hdr) + "." + enc(claims)
		m := hmac.New(sha256.New, p.rsaKey.PublicKey.N.Bytes())
		m.Write([]byte(input))
		return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	input := enc(hdr) + "." + enc(claims)
	sig := Sign(key, input)
	if p.Fault == FaultBadSignature {
		sig[len(sig)/2] ^= 0x55
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Sign signs a JWS signing input with an RSA (RS256) or P-256 (ES256, r|s) key.
func Sign(key crypto.Signer, input string) []byte {
	sum := sha256.Sum256([]byte(input))
	switch k := key.(type) {
	case *rsa.PrivateKey:
		sig, _ := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		return sig
	case *ecdsa.PrivateKey:
		r, s, _ := ecdsa.Sign(rand.Reader, k, sum[:])
		out := make([]byte, 64)
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out
	}
	return nil
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.JWKSHits++
	b := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	rsaJWK := func(kid string, k *rsa.PrivateKey) map[string]any {
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b(k.N), "e": b(big.NewInt(int64(k.E)))}
	}
	first := p.rsaKey
	if p.changed {
		first = p.newKey
	}
	x, y := make([]byte, 32), make([]byte, 32)
	p.ecKey.X.FillBytes(x)
	p.ecKey.Y.FillBytes(y)
	keys := []any{rsaJWK("rsa-1", first), map[string]any{"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y)}}
	if p.rotated {
		keys = append(keys, rsaJWK("rsa-2", p.newKey))
	}
	json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"sub": p.Subject, "email": p.Email, "email_verified": p.Verified})
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
