package oauth

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"sitepulse/store"
)

// maxFormBody caps the token and revocation request bodies: a legitimate one is well under 2 KiB.
const maxFormBody = 64 << 10

// readForm reads an application/x-www-form-urlencoded body. Parameters in the URL's query are
// not read: credentials do not belong there (RFC 6749 §3.2, OAuth 2.1 §3.2).
func readForm(r *http.Request) (url.Values, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, badRequest(errInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, badRequest(errInvalidRequest, "the body could not be read")
	}
	if len(body) > maxFormBody {
		return nil, tooLarge()
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, badRequest(errInvalidRequest, "the body is not valid form encoding")
	}
	return form, nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: errInvalidRequest, Description: "the body is larger than 64 KiB"}
}

// param returns a parameter's single value. An empty value counts as absent, and a repeated
// parameter is refused (OAuth 2.1 §3.1, §3.2).
func param(form url.Values, name string) (string, error) {
	switch v := form[name]; len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], nil
	}
	return "", badRequest(errInvalidRequest, name+" is repeated")
}

// params reads several parameters with param, stopping at the first repeated one.
func params(form url.Values, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := param(form, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// checkResource validates RFC 8707 resource parameters: absent, or naming this server's MCP
// endpoint (several resource parameters are allowed by RFC 8707 §2; each must name it).
func (s *Server) checkResource(values []string) error {
	for _, v := range values {
		if v != "" && v != s.resource {
			return badRequest(errInvalidTarget, "resource must be "+s.resource)
		}
	}
	return nil
}

// grantScope is the scope an authorization request gets: the supported scopes it names,
// unknown ones (offline_access, openid) dropped rather than refused (RFC 6749 §3.3 lets the
// server grant less; the token response says what), mcp:read always with mcp:write, and
// DefaultScope when it names none.
func grantScope(requested string) string {
	known := store.KnownScopes(requested)
	if store.HasScope(known, store.ScopeWrite) {
		return store.ScopeAll
	}
	return DefaultScope
}

// narrowScope is the scope of a refresh: the granted one, or the supported part of the
// requested one when it asks for less (RFC 6749 §6). Asking for a scope the grant lacks is
// invalid_scope: more needs the user's consent again.
func narrowScope(granted, requested string) (string, error) {
	known := store.KnownScopes(requested)
	if known == "" {
		return granted, nil
	}
	for _, s := range strings.Fields(known) {
		if !store.HasScope(granted, s) {
			return "", badRequest(errInvalidScope, s+" was not granted; ask the user again at the authorization endpoint")
		}
	}
	return known, nil
}
