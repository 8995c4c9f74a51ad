package oauth

import (
	"net/url"
	"strings"
)

// maxRedirectURILen bounds a registered redirect URI.
const maxRedirectURILen = 2000

// deniedSchemes can never receive an authorization response: they run code, read local data
// or are not addresses of an app.
var deniedSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "data": true, "file": true, "blob": true, "about": true,
	"filesystem": true, "view-source": true, "ftp": true, "ws": true, "wss": true, "mailto": true,
	"tel": true, "sms": true,
}

// loopbackHosts are the hosts a plain-http redirect URI may name (RFC 8252 §7.3, §8.3).
var loopbackHosts = map[string]bool{"localhost": true, "127.0.0.1": true, "[::1]": true}

// checkRedirectURI returns why raw cannot be registered as a redirect URI, or "" when it can.
// Allowed: https with a host; http to a loopback host, any port; a private-use scheme of an app
// (com.example.app:/cb, cursor://...). Refused: fragments, userinfo, wildcards, backslashes,
// whitespace, non-ASCII, and schemes that run code or read files (BCP 9700 §2.1, §4.1).
func checkRedirectURI(raw string) string {
	switch {
	case raw == "":
		return "a redirect URI is empty"
	case len(raw) > maxRedirectURILen:
		return "a redirect URI is longer than 2000 characters"
	case strings.ContainsAny(raw, "#"):
		return "a redirect URI must not contain a fragment (#)"
	case strings.ContainsAny(raw, "*"):
		return "a redirect URI must not contain a wildcard (*)"
	case strings.ContainsAny(raw, `\`):
		return "a redirect URI must not contain a backslash"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= 0x20 || raw[i] >= 0x7f {
			return "a redirect URI must be ASCII without spaces or control characters; percent-encode the rest"
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "a redirect URI must be an absolute URI"
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return "a redirect URI must not contain userinfo (user@host)"
	}
	if deniedSchemes[u.Scheme] {
		return "the " + u.Scheme + ": scheme cannot receive an authorization response"
	}
	if u.Opaque != "" {
		return "a redirect URI must have a path or authority after its scheme (app.scheme:/callback)"
	}
	switch {
	case u.Scheme == "https":
		if u.Hostname() == "" {
			return "an https redirect URI needs a host"
		}
	case u.Scheme == "http":
		if _, _, ok := splitLoopback(raw); !ok {
			return "http redirect URIs are allowed only for http://localhost, http://127.0.0.1 and http://[::1]; use https"
		}
	default:
		if u.Host == "" && u.Path == "" {
			return "a redirect URI with an app scheme needs a path (app.scheme:/callback)"
		}
	}
	return ""
}

// splitLoopback splits an http loopback URI into its host and what follows its port (path and
// query), working on the string itself so no parser can read it differently than it is stored.
func splitLoopback(raw string) (host, rest string, ok bool) {
	after, found := strings.CutPrefix(raw, "http://")
	if !found {
		return "", "", false
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	authority, rest := after[:end], after[end:]
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.HasSuffix(authority, "]") {
		host, port = authority[:i], authority[i+1:]
		if port == "" {
			return "", "", false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	if len(port) > 5 || !loopbackHosts[host] {
		return "", "", false
	}
	return host, rest, true
}

// matchRedirectURI answers whether an authorization request's redirect_uri is one the client
// registered: the same string exactly (RFC 3986 §6.2.1 simple comparison: no case folding, no
// normalisation), except that a loopback URI may name any port, because native apps listen on
// whatever port is free (RFC 8252 §7.3).
func matchRedirectURI(registered []string, requested string) bool {
	reqHost, reqRest, reqLoopback := splitLoopback(requested)
	for _, r := range registered {
		if r == requested {
			return true
		}
		if reqLoopback {
			if host, rest, ok := splitLoopback(r); ok && host == reqHost && rest == reqRest {
				return true
			}
		}
	}
	return false
}

// withParams returns uri with params added to its query. An existing query is kept as it is,
// byte for byte; registered URIs have no fragment.
func withParams(uri string, params url.Values) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
		if strings.HasSuffix(uri, "?") || strings.HasSuffix(uri, "&") {
			sep = ""
		}
	}
	return uri + sep + params.Encode()
}

// redirectHost is what the consent page shows of where the answer goes: the host of a web or
// loopback address, the scheme of an app.
func redirectHost(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Host
	}
	if u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}
