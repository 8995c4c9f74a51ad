package oauth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"sitepulse/store"
)

// Registration limits: a real client registers one or two redirect URIs with a short name.
const (
	maxRegistrationBody = 64 << 10
	maxRedirectURIs     = 10
	maxGrantTypes       = 10
	maxClientName       = 200
)

// registration is the part of an RFC 7591 request SitePulse reads. Other fields (response_types,
// logo_uri, client_uri, ...) are ignored, as RFC 7591 §2 allows.
type registration struct {
	ClientName              *string  `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
	Scope                   *string  `json:"scope"`
}

// clientInfo is the RFC 7591 §3.2.1 response: every registered field, echoed.
type clientInfo struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

// HandleRegister is dynamic client registration (RFC 7591): 201 with the client, 400
// invalid_redirect_uri, 422 invalid_client_metadata, 400 for a body that is not a JSON object.
// Clients never choose their client_id. The route rate-limits it per address.
func (s *Server) HandleRegister() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		allowAnyOrigin(w)
		c, secret, err := s.register(r)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		info := clientInfo{
			ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(), ClientName: c.Name, RedirectURIs: c.RedirectURIs,
			GrantTypes: c.GrantTypes, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: c.AuthMethod, Scope: c.Scope,
		}
		if secret != "" {
			never := int64(0)
			info.ClientSecret, info.ClientSecretExpiresAt = secret, &never
		}
		s.log.Info("oauth client registered", "client", c.ID, "auth_method", c.AuthMethod)
		WriteJSON(w, http.StatusCreated, info)
	})
}

// register validates a registration request and stores the client. It returns the client
// secret in the clear, once, for a confidential client.
func (s *Server) register(r *http.Request) (store.OAuthClient, string, error) {
	var req registration
	if err := decodeRegistration(r.Body, &req); err != nil {
		return store.OAuthClient{}, "", err
	}
	uris, err := checkRedirectURIs(req.RedirectURIs)
	if err != nil {
		return store.OAuthClient{}, "", err
	}
	c := store.OAuthClient{RedirectURIs: uris, CreatedAt: s.now()}
	if c.Name, err = checkClientName(req.ClientName); err != nil {
		return store.OAuthClient{}, "", err
	}
	if c.GrantTypes, err = checkGrantTypes(req.GrantTypes); err != nil {
		return store.OAuthClient{}, "", err
	}
	c.AuthMethod = authNone
	if m := req.TokenEndpointAuthMethod; m != nil && *m != "" {
		if *m != authNone && *m != authPost && *m != authBasic {
			return store.OAuthClient{}, "", invalidMetadata("token_endpoint_auth_method must be none, client_secret_post or client_secret_basic")
		}
		c.AuthMethod = *m
	}
	// The scopes the client may ask for: the supported ones it names, unknown ones dropped;
	// every scope when it names none.
	c.Scope = store.ScopeAll
	if req.Scope != nil && store.KnownScopes(*req.Scope) != "" {
		c.Scope = store.KnownScopes(*req.Scope)
	}
	c.ID, _ = store.NewSecret(prefixClient)
	var secret string
	if c.AuthMethod != authNone {
		secret, c.SecretHash = store.NewSecret(prefixSecret)
	}
	s.sweepClients(r.Context())
	if err := s.store.CreateClient(r.Context(), c); err != nil {
		return store.OAuthClient{}, "", err
	}
	return c, secret, nil
}

func invalidMetadata(description string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: errInvalidClientMetadata, Description: description}
}

// decodeRegistration reads a JSON object of at most maxRegistrationBody bytes. A field of the
// wrong type is a 422, or a 400 when it is redirect_uris.
func decodeRegistration(body io.Reader, req *registration) error {
	b, err := io.ReadAll(io.LimitReader(body, maxRegistrationBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: errInvalidClientMetadata, Description: "the body is larger than 64 KiB"}
		}
		return badRequest(errInvalidClientMetadata, "the body could not be read")
	}
	if len(b) > maxRegistrationBody {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: errInvalidClientMetadata, Description: "the body is larger than 64 KiB"}
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		return badRequest(errInvalidClientMetadata, "the body must be a JSON object")
	}
	err = json.Unmarshal(b, req)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Field, "redirect_uris"):
		return badRequest(errInvalidRedirectURI, "redirect_uris must be an array of strings")
	case errors.As(err, &typeErr):
		return invalidMetadata(typeErr.Field + " has the wrong type")
	}
	return badRequest(errInvalidClientMetadata, "the body must be a JSON object")
}

func checkRedirectURIs(uris []string) ([]string, error) {
	switch {
	case len(uris) == 0:
		return nil, badRequest(errInvalidRedirectURI, "redirect_uris is required: at least one redirect URI")
	case len(uris) > maxRedirectURIs:
		return nil, badRequest(errInvalidRedirectURI, "at most 10 redirect URIs")
	}
	out := []string{}
	for _, u := range uris {
		if why := checkRedirectURI(u); why != "" {
			return nil, badRequest(errInvalidRedirectURI, why)
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out, nil
}

func checkClientName(name *string) (string, error) {
	if name == nil || strings.TrimSpace(*name) == "" {
		return "", invalidMetadata("client_name is required: the name people see on the consent page")
	}
	n := strings.TrimSpace(*name)
	// Invisible and formatting characters (U+202E, zero-width joiners, Hangul fillers, the
	// Braille blank) can make a name on the consent page read as another app's.
	if why := store.DisplayTextProblem(n); why != "" {
		return "", invalidMetadata("client_name " + why)
	}
	if utf8.RuneCountInString(n) > maxClientName {
		return "", invalidMetadata("client_name must be at most 200 characters")
	}
	return n, nil
}

func checkGrantTypes(grants []string) ([]string, error) {
	if len(grants) == 0 {
		return []string{grantCode, grantRefresh}, nil
	}
	if len(grants) > maxGrantTypes {
		return nil, invalidMetadata("grant_types has too many entries")
	}
	out := []string{}
	for _, g := range grants {
		if g != grantCode && g != grantRefresh {
			return nil, invalidMetadata("grant_types may hold only authorization_code and refresh_token")
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if !slices.Contains(out, grantCode) {
		return nil, invalidMetadata("grant_types must include authorization_code")
	}
	return out, nil
}
