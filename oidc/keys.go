package oidc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// keySet is a provider's JWKS, cached. A token signed with a key id it does not hold makes it
// fetch the JWKS again, once, and at most once per minRefetch: a provider that rotated its
// keys is followed at once, and a stream of tokens with made-up key ids costs at most one
// fetch a minute.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	keys      []jwk
	fetchedAt time.Time // zero: never fetched
	fetches   int       // for tests
}

const (
	// minRefetch bounds the JWKS fetches an unknown key id may cause.
	minRefetch = time.Minute
	// keysMaxAge is how long a fetched JWKS is used before it is fetched again anyway.
	keysMaxAge = 24 * time.Hour
	maxJWKS    = 256 << 10
)

// key returns the key a token's header names. Without a kid, the provider must publish exactly
// one key of the algorithm's type.
func (s *keySet) key(ctx context.Context, h header) (jwk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.fetchedAt.IsZero() || now.Sub(s.fetchedAt) > keysMaxAge {
		if err := s.fetch(ctx, now); err != nil {
			return jwk{}, err
		}
	}
	if k, ok := s.find(h); ok {
		return k, nil
	}
	if now.Sub(s.fetchedAt) >= minRefetch {
		if err := s.fetch(ctx, now); err != nil {
			return jwk{}, err
		}
		if k, ok := s.find(h); ok {
			return k, nil
		}
	}
	if h.Kid == "" {
		return jwk{}, refuse("the ID token names no key id and the provider does not publish exactly one %s key", algs[h.Alg].kty)
	}
	return jwk{}, refuse("the ID token is signed with key id %q, which the provider does not publish", clip(h.Kid))
}

func (s *keySet) find(h header) (jwk, bool) {
	var only []jwk
	for _, k := range s.keys {
		if h.Kid != "" && k.Kid == h.Kid {
			return k, true
		}
		if k.Kty == algs[h.Alg].kty {
			only = append(only, k)
		}
	}
	if h.Kid == "" && len(only) == 1 {
		return only[0], true
	}
	return jwk{}, false
}

// fetch replaces the keys with the provider's JWKS. A failed fetch keeps the keys before.
func (s *keySet) fetch(ctx context.Context, now time.Time) error {
	s.fetches++
	s.fetchedAt = now // a failure also waits minRefetch before the next try
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return refuse("the provider's jwks_uri is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return refuse("the provider's keys could not be fetched: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return refuse("the provider's keys could not be fetched: its jwks_uri answered %d", resp.StatusCode)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKS)).Decode(&doc); err != nil {
		return refuse("the provider's keys (jwks_uri) are not a JWKS")
	}
	keys := doc.Keys[:0]
	for _, k := range doc.Keys {
		if k.decode() {
			keys = append(keys, k)
		}
	}
	s.keys = keys
	return nil
}
