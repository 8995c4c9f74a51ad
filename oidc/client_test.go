package oidc_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"sitepulse/oidc"
	"sitepulse/oidc/oidctest"
)

// signIn runs one sign-in against p up to the code exchange, as a browser would.
func signIn(t *testing.T, c *oidc.Client) (oidc.Identity, error) {
	t.Helper()
	f := oidc.NewFlow()
	u, err := c.AuthURL(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	if back.Query().Get("state") != f.State {
		t.Fatalf("state came back as %q", back.Query().Get("state"))
	}
	return c.Exchange(context.Background(), f, back.Query().Get("code"))
}

func client(p *oidctest.Provider, now func() time.Time) *oidc.Client {
	return oidc.New(oidc.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		RedirectURL: "http://127.0.0.1/callback", HTTP: p.Client(), Now: now, AllowHTTP: true})
}

func TestEveryWrongIDTokenIsRefusedWithItsReason(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	valid := []struct{ Fault, Reason string }{{"", ""}, {oidctest.FaultES256, ""}}
	for _, tc := range append(valid, oidctest.WrongTokens...) {
		t.Run("a token with "+strings.TrimSpace(tc.Fault+" ")+"is judged", func(t *testing.T) {
			p.Set(func(p *oidctest.Provider) { p.Fault = tc.Fault })
			id, err := signIn(t, client(p, time.Now))
			if tc.Reason == "" {
				if err != nil || id.Subject != "sub-1" || id.Issuer != p.Issuer || id.Email != "pat@example.com" || !id.EmailVerified {
					t.Fatalf("got %+v, %v; want sub-1 of %s", id, err, p.Issuer)
				}
				return
			}
			var r *oidc.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.Reason) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.Reason)
			}
		})
	}
}

func TestAReplayedCodeIsRefused(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	c := client(p, time.Now)
	f := oidc.NewFlow()
	u, _ := c.AuthURL(context.Background(), f)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, _ := url.Parse(resp.Header.Get("Location"))
	if _, err := c.Exchange(context.Background(), f, code.Query().Get("code")); err != nil {
		t.Fatalf("first redemption: %v", err)
	}
	_, err = c.Exchange(context.Background(), f, code.Query().Get("code"))
	var r *oidc.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "refused the code (invalid_grant)") {
		t.Fatalf("replay: got %v, want the provider's refusal", err)
	}
}

// A provider that rotates to a new key is followed at once: the unknown kid makes one JWKS
// fetch. A second unknown kid within a minute makes none (one fetch a minute at most), and one
// after the minute makes one again.
func TestKeyRotationRefetchesTheJWKSOnceAMinuteAtMost(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	now := time.Now()
	clock := func() time.Time { return now }
	p.Now = clock
	c := client(p, clock)
	if _, err := signIn(t, c); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	p.Set(func(p *oidctest.Provider) { p.Fault = oidctest.FaultRotated })
	if _, err := signIn(t, c); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if got := p.Hits(); got != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (first use, rotation)", got)
	}
	p.Set(func(p *oidctest.Provider) { p.Fault = oidctest.FaultUnknownKid })
	for i := 0; i < 5; i++ {
		if _, err := signIn(t, c); err == nil {
			t.Fatal("an unknown kid was accepted")
		}
	}
	if got := p.Hits(); got != 2 {
		t.Fatalf("JWKS fetched %d times after five unknown kids within the minute, want still 2", got)
	}
	now = now.Add(time.Minute)
	signIn(t, c)
	if got := p.Hits(); got != 3 {
		t.Fatalf("JWKS fetched %d times a minute later, want 3", got)
	}
}

func TestSkewIsBounded(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	now := time.Now()
	p.Now = func() time.Time { return now.Add(90 * time.Second) } // the provider's clock runs 90 s ahead
	if _, err := signIn(t, client(p, func() time.Time { return now })); err != nil {
		t.Fatalf("90 s of skew: %v", err)
	}
	p.Now = func() time.Time { return now.Add(3 * time.Minute) }
	if _, err := signIn(t, client(p, func() time.Time { return now })); err == nil {
		t.Fatal("3 min of skew was accepted, want refused (2 min allowed)")
	}
}

func TestRecheckEndsWhenTheProviderRefuses(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	c := client(p, time.Now)
	id, err := signIn(t, c)
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.Recheck(context.Background(), id.RefreshToken, id.Subject)
	if err != nil || next == "" {
		t.Fatalf("recheck: %q, %v", next, err)
	}
	p.Set(func(p *oidctest.Provider) { p.Refuse = true })
	_, err = c.Recheck(context.Background(), next, id.Subject)
	var r *oidc.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("recheck of a disabled person: %v, want a refusal", err)
	}
}

func TestDiscoveryMustNameTheConfiguredIssuer(t *testing.T) {
	p := oidctest.New(t, "sitepulse", "s3cret")
	c := oidc.New(oidc.Config{Issuer: p.Issuer + "/", ClientID: "sitepulse", HTTP: p.Client(), AllowHTTP: true})
	_, err := c.AuthURL(context.Background(), oidc.NewFlow())
	if err == nil || !strings.Contains(err.Error(), "names issuer") {
		t.Fatalf("got %v, want the issuer mismatch", err)
	}
}
