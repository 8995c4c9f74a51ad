package oauth

import (
	"encoding/json"
	"net/http"

	"sitepulse/store"
)

// asMetadata is the authorization server metadata (RFC 8414): the interface's fields and the
// two that MCP 2025-11-25 clients look for.
type asMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	ServiceDocumentation              string   `json:"service_documentation"`
	// AuthorizationResponseIssParameterSupported: every authorization response, errors
	// included, carries iss (RFC 9207), so a client can tell which server answered.
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
	// ClientIDMetadataDocumentSupported: an https URL is accepted as a client_id and its
	// document fetched (draft-ietf-oauth-client-id-metadata-document).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported"`
}

// prMetadata is the protected resource metadata of the MCP endpoint (RFC 9728).
type prMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceDocumentation  string   `json:"resource_documentation"`
}

// Grant types and client authentication methods.
const (
	grantCode    = "authorization_code"
	grantRefresh = "refresh_token"
	authNone     = "none"
	authPost     = "client_secret_post"
	authBasic    = "client_secret_basic"
)

// metadata encodes both documents once: they depend only on BASE_URL.
func (s *Server) metadata() (as, prm []byte) {
	as, _ = json.Marshal(asMetadata{
		Issuer:                            s.issuer,
		AuthorizationEndpoint:             s.issuer + "/oauth/authorize",
		TokenEndpoint:                     s.issuer + "/api/oauth/token",
		RegistrationEndpoint:              s.issuer + "/api/oauth/register",
		RevocationEndpoint:                s.issuer + "/api/oauth/revoke",
		ScopesSupported:                   store.Scopes,
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{grantCode, grantRefresh},
		TokenEndpointAuthMethodsSupported: []string{authNone, authPost, authBasic},
		CodeChallengeMethodsSupported:     []string{"S256"},
		ServiceDocumentation:              s.issuer + DocumentationPath,

		AuthorizationResponseIssParameterSupported: true,
		ClientIDMetadataDocumentSupported:          s.fetch != nil,
	})
	prm, _ = json.Marshal(prMetadata{
		Resource:               s.resource,
		AuthorizationServers:   []string{s.issuer},
		ScopesSupported:        store.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceDocumentation:  s.issuer + DocumentationPath,
	})
	return append(as, '\n'), append(prm, '\n')
}

// HandleMetadata serves the authorization server metadata, cacheable for an hour (interface,
// Limits).
func (s *Server) HandleMetadata() http.Handler {
	return serveDocument(s.asMeta)
}

// HandleResourceMetadata serves the protected resource metadata of the MCP endpoint.
func (s *Server) HandleResourceMetadata() http.Handler {
	return serveDocument(s.prmMeta)
}

func serveDocument(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		allowAnyOrigin(w)
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		w.Write(doc)
	})
}
