package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"sitepulse/store"
)

// maxState bounds the state parameter echoed back to the client.
const maxState = 1024

// AuthorizeRequest is an authorization request whose every parameter was checked.
type AuthorizeRequest struct {
	Client        store.OAuthClient
	RedirectURI   string // as requested: a registered URI, or one differing only by loopback port
	State         string
	CodeChallenge string
	Scope         string
	Resource      string // empty when the client sent none
}

// AuthorizeError refuses an authorization request. When the client or its redirect URI cannot
// be trusted, Location is empty and the error must be shown to the user, never sent anywhere
// (OAuth 2.1 §4.1.2.1); otherwise Location is the client's redirect URI carrying error,
// error_description and the request's state. Anyone can register a redirect URI, so only a
// loopback one (a native app on the user's machine) may be redirected to automatically; any
// other is shown as a link on the server's own page (RFC 9700 §4.11.2).
type AuthorizeError struct {
	Code        string
	Description string
	ClientName  string // the client's self-asserted name, when the client is known
	redirectURI string
	state       string
	issuer      string // RFC 9207's iss
}

// Loopback answers whether Location is a loopback URI, which may be redirected to at once.
func (e *AuthorizeError) Loopback() bool {
	_, _, ok := splitLoopback(e.redirectURI)
	return ok
}

// Host is the host Location sends the browser to, for the user to judge.
func (e *AuthorizeError) Host() string { return redirectHost(e.redirectURI) }

func (e *AuthorizeError) Error() string { return e.Code + ": " + e.Description }

// Location is where to send the browser with the error, or "" to show it instead.
func (e *AuthorizeError) Location() string {
	if e.redirectURI == "" {
		return ""
	}
	return withParams(e.redirectURI, answer("error", e.Code, "error_description", cleanDescription(e.Description), "state", e.state, "iss", e.issuer))
}

// answer builds the query of an authorization response, leaving out empty values.
func answer(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v
}

// ValidClientID answers whether id has the shape of a client id this server issues; anything
// else is unknown without a lookup.
func ValidClientID(id string) bool {
	if len(id) <= len(prefixClient) || len(id) > 100 || id[:len(prefixClient)] != prefixClient {
		return false
	}
	for i := len(prefixClient); i < len(id); i++ {
		if c := id[i]; !unreserved(c) || c == '.' || c == '~' {
			return false
		}
	}
	return true
}

// Authorize checks the query of GET /oauth/authorize (interface, GET /oauth/authorize; OAuth
// 2.1 §4.1.1). A refusal is an *AuthorizeError; any other error is internal.
func (s *Server) Authorize(ctx context.Context, rawQuery string) (AuthorizeRequest, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return AuthorizeRequest{}, &AuthorizeError{Code: errInvalidRequest, Description: "the query string is malformed"}
	}
	page := func(description string) error {
		return &AuthorizeError{Code: errInvalidRequest, Description: description}
	}
	clientID, err := param(q, "client_id")
	switch {
	case err != nil:
		return AuthorizeRequest{}, page("client_id is repeated")
	case clientID == "":
		return AuthorizeRequest{}, page("client_id is missing")
	}
	var req AuthorizeRequest
	switch {
	case ValidClientID(clientID):
		req.Client, err = s.store.Client(ctx, clientID)
	case store.IsMetadataClientID(clientID):
		if req.Client, err = s.metadataClient(ctx, clientID); err != nil {
			return AuthorizeRequest{}, err
		}
		// Stored so that the request, code, tokens and consent can name it; the document's
		// latest name and redirect URIs replace the last ones.
		if err := s.store.SaveMetadataClient(ctx, req.Client); err != nil {
			return AuthorizeRequest{}, fmt.Errorf("save metadata client: %w", err)
		}
	default:
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return AuthorizeRequest{}, &AuthorizeError{Code: errInvalidClient, Description: "the app (client_id) is not registered here"}
	case err != nil:
		return AuthorizeRequest{}, err
	}
	redirectURI, err := param(q, "redirect_uri")
	switch {
	case err != nil:
		return AuthorizeRequest{}, page("redirect_uri is repeated")
	case redirectURI == "":
		return AuthorizeRequest{}, page("redirect_uri is missing")
	case !matchRedirectURI(req.Client.RedirectURIs, redirectURI):
		return AuthorizeRequest{}, page("redirect_uri is not one the app registered")
	}
	req.RedirectURI = redirectURI

	// From here on the redirect URI is trusted: errors go back to the client.
	refuse := func(code, description string) error {
		return &AuthorizeError{Code: code, Description: description, ClientName: req.Client.Name, redirectURI: req.RedirectURI, state: req.State, issuer: s.issuer}
	}
	// refuseWith sends back a parameter check's *Error.
	refuseWith := func(err error) error {
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		return refuse(e.Code, e.Description)
	}
	state, err := param(q, "state")
	if err != nil {
		return AuthorizeRequest{}, refuse(errInvalidRequest, "state is repeated")
	}
	if !validState(state) {
		return AuthorizeRequest{}, refuse(errInvalidRequest, "state must be at most 1024 printable ASCII characters")
	}
	req.State = state
	vals, err := params(q, "response_type", "code_challenge", "code_challenge_method", "scope")
	if err != nil {
		return AuthorizeRequest{}, refuseWith(err)
	}
	responseType, challenge, method, scope := vals[0], vals[1], vals[2], vals[3]
	switch {
	case responseType == "":
		return AuthorizeRequest{}, refuse(errInvalidRequest, "response_type is missing")
	case responseType != "code":
		return AuthorizeRequest{}, refuse(errUnsupportedResponseType, "the only response_type is code")
	case challenge == "":
		return AuthorizeRequest{}, refuse(errInvalidRequest, "code_challenge is required (PKCE with S256)")
	case method == "":
		return AuthorizeRequest{}, refuse(errInvalidRequest, "code_challenge_method is required and must be S256")
	case method != "S256":
		return AuthorizeRequest{}, refuse(errInvalidRequest, "the only code_challenge_method is S256")
	case !validChallenge(challenge):
		return AuthorizeRequest{}, refuse(errInvalidRequest, "code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)")
	}
	req.CodeChallenge = challenge
	req.Scope = grantScope(scope)
	if err := s.checkResource(q["resource"]); err != nil {
		return AuthorizeRequest{}, refuseWith(err)
	}
	for _, v := range q["resource"] {
		if v != "" {
			req.Resource = s.resource
		}
	}
	return req, nil
}

// validState accepts RFC 6749 Appendix A.5 state: printable ASCII, here at most 1024 characters.
func validState(s string) bool {
	if len(s) > maxState {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Pending is a checked authorization request waiting for the user's answer on the consent page.
type Pending struct {
	// ID is the secret the consent form carries. Only its hash is stored, bound to the user;
	// everything else is read back from the server's copy when the user answers.
	ID           string
	ClientName   string
	RedirectHost string
	// ClientHost is the host of a client known by its metadata document's URL: who published
	// the name. Empty for a registered client.
	ClientHost string
	Scope      string
	// MixedScripts is set when the client's name mixes scripts whose letters look alike
	// ("Cl" + Cyrillic "а" + "ude"): the page warns that it may imitate another app's name.
	MixedScripts bool
}

// Begin stores a checked request for the signed-in user and returns what the consent page shows.
func (s *Server) Begin(ctx context.Context, userID string, req AuthorizeRequest) (Pending, error) {
	id, hash := store.NewSecret("")
	now := s.now()
	err := s.store.CreateAuthRequest(ctx, store.AuthRequest{
		IDHash: hash, UserID: userID, ClientID: req.Client.ID, RedirectURI: req.RedirectURI, State: req.State,
		CodeChallenge: req.CodeChallenge, Scope: req.Scope, Resource: req.Resource, CreatedAt: now, ExpiresAt: now.Add(pendingTTL),
	})
	if err != nil {
		return Pending{}, fmt.Errorf("store authorization request: %w", err)
	}
	p := Pending{ID: id, ClientName: req.Client.Name, RedirectHost: redirectHost(req.RedirectURI), Scope: req.Scope,
		MixedScripts: store.MixedScripts(req.Client.Name)}
	if store.IsMetadataClientID(req.Client.ID) {
		if u, err := url.Parse(req.Client.ID); err == nil {
			p.ClientHost = u.Host
		}
	}
	return p, nil
}

// Decide answers a pending request of the user and returns where to send the browser: on
// approval a fresh code (valid 10 minutes, bound to client, redirect URI, challenge and
// resource) and the state; on denial access_denied and the state. A request is answered once;
// an unknown, expired, answered or other user's request is store.ErrNotFound.
func (s *Server) Decide(ctx context.Context, userID, pendingID string, approve bool) (string, error) {
	loc, _, err := s.DecideRequest(ctx, userID, pendingID, approve)
	return loc, err
}

// DecideRequest is Decide, also answering the request it decided (its client and scope), for
// the caller's security log.
func (s *Server) DecideRequest(ctx context.Context, userID, pendingID string, approve bool) (string, store.AuthRequest, error) {
	if pendingID == "" || len(pendingID) > maxSecretLen {
		return "", store.AuthRequest{}, fmt.Errorf("authorization request: %w", store.ErrNotFound)
	}
	now := s.now()
	req, err := s.store.TakeAuthRequest(ctx, store.HashSecret(pendingID), userID, now)
	if err != nil {
		return "", req, err
	}
	if !approve {
		s.log.Info("authorization denied", "user", userID, "client", req.ClientID)
		return withParams(req.RedirectURI, answer("error", errAccessDenied,
			"error_description", "the user denied the request", "state", req.State, "iss", s.issuer)), req, nil
	}
	code, hash := store.NewSecret(prefixCode)
	err = s.store.CreateCode(ctx, store.AuthCode{
		CodeHash: hash, ClientID: req.ClientID, UserID: userID, RedirectURI: req.RedirectURI, CodeChallenge: req.CodeChallenge,
		Scope: req.Scope, Resource: req.Resource, FamilyID: store.NewID(), CreatedAt: now, ExpiresAt: now.Add(CodeTTL),
	})
	if err != nil {
		return "", req, fmt.Errorf("create code: %w", err)
	}
	if err := s.store.SaveConsent(ctx, store.Consent{UserID: userID, ClientID: req.ClientID, Scope: req.Scope, CreatedAt: now}); err != nil {
		return "", req, fmt.Errorf("save consent: %w", err)
	}
	s.log.Info("authorization approved", "user", userID, "client", req.ClientID)
	return withParams(req.RedirectURI, answer("code", code, "state", req.State, "iss", s.issuer)), req, nil
}
