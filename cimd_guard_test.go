package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"sitepulse/oauth"
	"sitepulse/scanner/netguard"
	"sitepulse/store/memory"
)

// An https client_id naming an internal address is never fetched: the authorization server
// fetches Client ID Metadata Documents with the outbound guard's client, as run() wires it.
func TestClientMetadataDocumentGoesThroughTheGuard(t *testing.T) {
	var hits atomic.Int32
	internal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	defer internal.Close()
	srv := oauth.New(oauth.Config{Store: memory.New(), BaseURL: "https://sp.example", MetadataClient: netguard.Guard{}.Client()})
	q := url.Values{"client_id": {internal.URL + "/client.json"}, "redirect_uri": {"http://127.0.0.1/cb"}, "response_type": {"code"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	_, err := srv.Authorize(context.Background(), q.Encode())
	var ae *oauth.AuthorizeError
	if !errors.As(err, &ae) || ae.Code != "invalid_client" || ae.Location() != "" {
		t.Errorf("err %v, want invalid_client shown on a page", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal server got %d requests, want none", n)
	}
}
