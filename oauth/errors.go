package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"sitepulse/store"
)

// OAuth error codes (RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2, RFC 8707 §2).
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errInvalidGrant            = "invalid_grant"
	errUnauthorizedClient      = "unauthorized_client"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errUnsupportedResponseType = "unsupported_response_type"
	errInvalidScope            = "invalid_scope"
	errInvalidTarget           = "invalid_target"
	errAccessDenied            = "access_denied"
	errInvalidRedirectURI      = "invalid_redirect_uri"
	errInvalidClientMetadata   = "invalid_client_metadata"
	errServerError             = "server_error"
)

// Error is a refusal in the OAuth shape {error, error_description} with its HTTP status.
type Error struct {
	Status      int
	Code        string
	Description string
	basic       bool // a failed client_secret_basic: the 401 carries a Basic challenge (RFC 6749 §5.2)
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func badRequest(code, description string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Description: description}
}

// WriteError writes the OAuth error shape. The description keeps only the characters RFC 6749
// §5.2 allows (printable ASCII without '"' and '\'), so none can break a line or a header.
// Error responses are never cached.
func WriteError(w http.ResponseWriter, status int, code, description string) {
	noStore(w)
	WriteJSON(w, status, struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}{code, cleanDescription(description)})
}

// writeErr writes err when it is an *Error, and a logged 500 otherwise.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if errors.As(err, &e) {
		if e.basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="sitepulse"`)
		}
		WriteError(w, e.Status, e.Code, e.Description)
		return
	}
	if store.Classify(err) == store.ErrUnavailable {
		// A database restart passes: RFC 6749 §4.1.2.1's temporarily_unavailable, as a 503.
		s.log.Warn("oauth: database unavailable", "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the service is temporarily unavailable; retry shortly")
		return
	}
	s.log.Error("oauth", "path", r.URL.Path, "err", err)
	WriteError(w, http.StatusInternalServerError, errServerError, "internal error; it has been logged")
}

func cleanDescription(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return ' '
		}
		return r
	}, s)
}

// WriteJSON writes v as a JSON response. It encodes v before writing the header, so a
// failure is a clean 500. The HTTP surface (package handlers) writes its JSON with it too.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// noStore marks a response as never to be cached (RFC 6749 §5.1): it carries credentials or
// answers a request that did.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// allowAnyOrigin lets browser-based MCP clients read a response cross-origin. These endpoints
// take no cookies or other ambient credentials, so any origin may.
func allowAnyOrigin(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
}

// HandlePreflight answers CORS preflight requests for the metadata documents and the JSON
// endpoints (a browser asks before a JSON POST or a request with an MCP-Protocol-Version header).
func (s *Server) HandlePreflight() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		allowAnyOrigin(w)
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	})
}
