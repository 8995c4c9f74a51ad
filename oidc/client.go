package oidc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Config is one provider as an operator or a workspace owner set it up.
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is SitePulse's callback, registered at the provider.
	RedirectURL string
	// HTTP fetches the provider's documents and redeems codes: the outbound guard's client.
	HTTP *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Skew is the clock difference tolerated on exp and iat; 0 means 2 minutes, and more than
	// 5 minutes is cut to 5.
	Skew time.Duration
	// AllowHTTP lets the provider's URLs be plain http (tests, SCAN_ALLOW_PRIVATE).
	AllowHTTP bool
}

// Client is a relying party of one provider. Its discovery document is read at first use and
// again every metadataMaxAge; its keys are cached (keySet).
type Client struct {
	cfg  Config
	mu   sync.Mutex
	meta Metadata
	at   time.Time
	keys *keySet
}

const metadataMaxAge = time.Hour

// New makes the relying party of cfg. It reaches the provider only when first used.
func New(cfg Config) *Client {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	switch {
	case cfg.Skew <= 0:
		cfg.Skew = 2 * time.Minute
	case cfg.Skew > 5*time.Minute:
		cfg.Skew = 5 * time.Minute
	}
	return &Client{cfg: cfg}
}

// Issuer is the provider's issuer URL, as configured.
func (c *Client) Issuer() string { return c.cfg.Issuer }

func (c *Client) metadata(ctx context.Context) (Metadata, *keySet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.keys != nil && now.Sub(c.at) < metadataMaxAge {
		return c.meta, c.keys, nil
	}
	m, err := discover(ctx, c.cfg.HTTP, c.cfg.Issuer, c.cfg.AllowHTTP)
	if err != nil {
		return Metadata{}, nil, err
	}
	if c.keys == nil || c.keys.url != m.JWKSURI {
		c.keys = &keySet{url: m.JWKSURI, client: c.cfg.HTTP, now: c.cfg.Now}
	}
	c.meta, c.at = m, now
	return m, c.keys, nil
}

// Flow is one sign-in's secrets, kept by SitePulse (in a sealed cookie) between the redirect
// to the provider and its return.
type Flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
}

// NewFlow makes fresh random state, nonce and PKCE verifier.
func NewFlow() Flow {
	r := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return Flow{State: r(), Nonce: r(), Verifier: r()}
}

// AuthURL is the provider's authorization request of flow f: code, PKCE S256, state, nonce.
func (c *Client) AuthURL(ctx context.Context, f Flow) (string, error) {
	m, _, err := c.metadata(ctx)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(f.Verifier))
	scope := "openid email profile"
	if contains(m.ScopesSupported, "offline_access") {
		scope += " offline_access" // a refresh token, to ask the provider again later (Recheck)
	}
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {c.cfg.ClientID},
		"redirect_uri":          {c.cfg.RedirectURL},
		"scope":                 {scope},
		"state":                 {f.State},
		"nonce":                 {f.Nonce},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
	}
	sep := "?"
	if strings.Contains(m.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	return m.AuthorizationEndpoint + sep + q.Encode(), nil
}

// Identity is who the provider vouched for: (Issuer, Subject) is the identity, never the
// e-mail alone.
type Identity struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
	// RefreshToken, when the provider gave one, lets SitePulse ask it again later whether it
	// still vouches for the person (Recheck).
	RefreshToken string
}

type tokenResponse struct {
	IDToken      string `json:"id_token"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

// Exchange redeems the code the provider returned for flow f and verifies its ID token.
func (c *Client) Exchange(ctx context.Context, f Flow, code string) (Identity, error) {
	if code == "" || len(code) > 2048 {
		return Identity{}, refuse("the provider returned no authorization code")
	}
	m, keys, err := c.metadata(ctx)
	if err != nil {
		return Identity{}, err
	}
	tr, err := c.token(ctx, m, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {c.cfg.RedirectURL},
		"code_verifier": {f.Verifier},
	})
	if err != nil {
		return Identity{}, err
	}
	if tr.IDToken == "" {
		return Identity{}, refuse("the provider returned no ID token")
	}
	cl, err := c.verify(ctx, keys, tr.IDToken, f.Nonce, tr.AccessToken)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Issuer: cl.Iss, Subject: cl.Sub, Email: cl.Email, EmailVerified: cl.emailVerified(), Name: cl.Name, RefreshToken: tr.RefreshToken}
	if id.Email == "" && m.UserinfoEndpoint != "" && tr.AccessToken != "" {
		c.userinfo(ctx, m, tr.AccessToken, &id)
	}
	return id, nil
}

// Recheck asks the provider whether it still vouches for the person of refreshToken (a refresh
// grant): the new refresh token when it does (or the old one, if it sends none), a Refusal when
// it refuses (the account was disabled, the grant revoked), an Unreachable when it cannot be
// asked (check for Unreachable first: it may wrap a Refusal's words).
func (c *Client) Recheck(ctx context.Context, refreshToken, subject string) (string, error) {
	m, keys, err := c.metadata(ctx)
	if err != nil {
		return "", &Unreachable{Err: err} // its discovery document failing is not a refusal to vouch
	}
	tr, err := c.token(ctx, m, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
	if err != nil {
		return "", err
	}
	if tr.IDToken != "" { // a refreshed ID token has no nonce (Core §12.2); its subject must not change
		t, err := parseJWS(tr.IDToken)
		if err != nil {
			return "", err
		}
		key, err := keys.key(ctx, t.header)
		if err != nil {
			return "", &Unreachable{Err: err}
		}
		if err := t.verify(key); err != nil {
			return "", err
		}
		var cl claims
		if json.Unmarshal(t.payload, &cl) != nil || cl.Sub != subject || cl.Iss != c.cfg.Issuer {
			return "", refuse("the provider's refreshed ID token is for someone else")
		}
	}
	if tr.RefreshToken == "" {
		return refreshToken, nil
	}
	return tr.RefreshToken, nil
}

// token posts a token request with the client's credentials (client_secret_basic, RFC 6749
// §2.3.1: the id and secret form-encoded first).
func (c *Client) token(ctx context.Context, m Metadata, form url.Values) (tokenResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return tokenResponse{}, refuse("the provider's token_endpoint is not a URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return tokenResponse{}, &Unreachable{Err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var tr tokenResponse
	decodeErr := json.NewDecoder(bytes.NewReader(body)).Decode(&tr)
	if resp.StatusCode >= 500 {
		return tokenResponse{}, &Unreachable{Err: refuse("the provider's token endpoint answered %d", resp.StatusCode)}
	}
	if resp.StatusCode != http.StatusOK || tr.Error != "" {
		code := tr.Error
		if code == "" || !isToken(code) {
			code = "status " + http.StatusText(resp.StatusCode)
		}
		return tokenResponse{}, refuse("the provider refused the code (%s): it was used already, has expired, or was made for another client", clip(code))
	}
	if decodeErr != nil {
		return tokenResponse{}, refuse("the provider's token response is not JSON")
	}
	return tr, nil
}

// Unreachable is a provider that could not be asked (down, 5xx): not a refusal to vouch.
type Unreachable struct{ Err error }

func (u *Unreachable) Error() string {
	return "the identity provider could not be reached: " + u.Err.Error()
}
func (u *Unreachable) Unwrap() error { return u.Err }

// verify checks an ID token's signature and claims.
func (c *Client) verify(ctx context.Context, keys *keySet, raw, nonce, accessToken string) (claims, error) {
	t, err := parseJWS(raw)
	if err != nil {
		return claims{}, err
	}
	key, err := keys.key(ctx, t.header)
	if err != nil {
		return claims{}, err
	}
	if err := t.verify(key); err != nil {
		return claims{}, err
	}
	var cl claims
	dec := json.NewDecoder(bytes.NewReader(t.payload))
	dec.UseNumber()
	if err := dec.Decode(&cl); err != nil {
		return claims{}, refuse("the ID token's claims are not JSON")
	}
	err = cl.check(expectations{issuer: c.cfg.Issuer, clientID: c.cfg.ClientID, nonce: nonce, accessToken: accessToken,
		now: c.cfg.Now(), skew: c.cfg.Skew}, t.header.Alg)
	return cl, err
}

// userinfo fills the e-mail from the UserInfo endpoint, when its sub is the ID token's (Core
// §5.3.2); it never changes the identity.
func (c *Client) userinfo(ctx context.Context, m Metadata, accessToken string, id *Identity) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.UserinfoEndpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var cl claims
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&cl) != nil || cl.Sub != id.Subject {
		return
	}
	id.Email, id.EmailVerified = cl.Email, cl.emailVerified()
	if id.Name == "" {
		id.Name = cl.Name
	}
}

// isToken says whether s is an OAuth error code's characters only, fit to show.
func isToken(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s != ""
}
