package oidc

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"time"
)

// claims are the ID token claims SitePulse reads.
type claims struct {
	Iss           string          `json:"iss"`
	Sub           string          `json:"sub"`
	Aud           json.RawMessage `json:"aud"`
	Azp           string          `json:"azp"`
	Exp           *json.Number    `json:"exp"`
	Iat           *json.Number    `json:"iat"`
	Nonce         string          `json:"nonce"`
	AtHash        string          `json:"at_hash"`
	Email         string          `json:"email"`
	EmailVerified json.RawMessage `json:"email_verified"`
	Name          string          `json:"name"`
}

// expectations are what an ID token must say.
type expectations struct {
	issuer, clientID, nonce, accessToken string
	now                                  time.Time
	skew                                 time.Duration
}

// maxTokenAge bounds how long ago an ID token may have been issued: it is redeemed from a
// code within seconds of being made.
const maxTokenAge = 10 * time.Minute

// check verifies the claims of a token whose signature verified (Core §3.1.3.7).
func (c claims) check(e expectations, alg string) error {
	if c.Iss != e.issuer {
		return refuse("the ID token was issued by %q, not by the configured issuer %q", clip(c.Iss), clip(e.issuer))
	}
	if c.Sub == "" || len(c.Sub) > 255 {
		return refuse("the ID token has no subject (sub) SitePulse can keep")
	}
	aud, err := audiences(c.Aud)
	if err != nil {
		return err
	}
	if !contains(aud, e.clientID) {
		return refuse("the ID token is for another client (aud does not contain this client id)")
	}
	if (len(aud) > 1 || c.Azp != "") && c.Azp != e.clientID {
		return refuse("the ID token was issued to another party (azp is %q, not this client id)", clip(c.Azp))
	}
	exp, ok := seconds(c.Exp)
	if !ok {
		return refuse("the ID token has no expiry (exp)")
	}
	if !e.now.Before(exp.Add(e.skew)) {
		return refuse("the ID token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	iat, ok := seconds(c.Iat)
	if !ok {
		return refuse("the ID token has no issue time (iat)")
	}
	if iat.After(e.now.Add(e.skew)) {
		return refuse("the ID token was issued in the future (iat %s): the provider's clock and this server's disagree by more than %s", iat.UTC().Format(time.RFC3339), e.skew)
	}
	if e.now.Sub(iat) > maxTokenAge+e.skew {
		return refuse("the ID token was issued too long ago (iat %s)", iat.UTC().Format(time.RFC3339))
	}
	if subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(e.nonce)) != 1 || e.nonce == "" {
		return refuse("the ID token's nonce is not the one this sign-in sent: it belongs to another sign-in (a replay?)")
	}
	if c.AtHash != "" && e.accessToken != "" {
		h := algs[alg].newFn()
		h.Write([]byte(e.accessToken))
		sum := h.Sum(nil)
		want := base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
		if subtle.ConstantTimeCompare([]byte(want), []byte(c.AtHash)) != 1 {
			return refuse("the ID token's at_hash does not match the access token issued with it")
		}
	}
	return nil
}

// audiences reads aud: one string or an array of them.
func audiences(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, nil
	}
	return nil, refuse("the ID token has no audience (aud)")
}

func seconds(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || f > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// emailVerified reads email_verified: true, or the string "true" some providers send.
func (c claims) emailVerified() bool {
	var b bool
	if json.Unmarshal(c.EmailVerified, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(c.EmailVerified, &s) == nil && s == "true"
}
