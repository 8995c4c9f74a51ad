package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// AccessKind is how SitePulse signs in to audit a site's private pages (DESIGN §17): not at
// all, with HTTP basic auth, with cookies the owner pasted, or through the site's login form.
type AccessKind string

// Access kinds.
const (
	AccessNone    AccessKind = "none"
	AccessBasic   AccessKind = "basic"
	AccessCookies AccessKind = "cookies"
	AccessForm    AccessKind = "form"
)

// AccessKinds are the kinds in the order the edit page offers them.
var AccessKinds = []AccessKind{AccessNone, AccessBasic, AccessCookies, AccessForm}

// Valid reports whether k is one of the four kinds.
func (k AccessKind) Valid() bool {
	return k == AccessNone || k == AccessBasic || k == AccessCookies || k == AccessForm
}

// Limits of an access setting.
const (
	MaxAccessLines = 50   // cookies or form fields
	MaxAccessValue = 4096 // bytes of one value (a cookie's, a password)
	maxAccessName  = 200  // bytes of a cookie's or field's name, a user name
	maxProof       = 200  // characters of the proof text
)

// NameValue is one "name=value" line of the cookies or the login form's fields.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Access is a site's sign-in, opened. It lives in memory only: at rest it is sealed
// (SiteAccess), and it is never logged, exported or shown back (String and LogValue hide it).
type Access struct {
	Kind     AccessKind  `json:"kind"`
	Username string      `json:"username,omitempty"` // basic
	Password string      `json:"password,omitempty"` // basic
	Cookies  []NameValue `json:"cookies,omitempty"`  // cookies: set for the site's host only
	LoginURL string      `json:"login_url,omitempty"`
	Fields   []NameValue `json:"fields,omitempty"` // form: posted to LoginURL
	Proof    string      `json:"proof,omitempty"`  // form: text the signed-in answer shows
}

// Encode is the plaintext an Access is sealed from: JSON.
func (a Access) Encode() string {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err) // strings and slices of strings only
	}
	return string(b)
}

// DecodeAccess reads what Encode wrote, once opened. Its error never quotes the text.
func DecodeAccess(plain string) (Access, error) {
	var a Access
	if err := json.Unmarshal([]byte(plain), &a); err != nil || !a.Kind.Valid() {
		return Access{}, errors.New("the opened access setting is not one")
	}
	return a, nil
}

// String names the kind only, so that a %v never prints a credential.
func (a Access) String() string { return "access(" + string(a.Kind) + ")" }

// GoString is String, for %#v.
func (a Access) GoString() string { return a.String() }

// LogValue is the kind only, so that a log attribute never carries a credential.
func (a Access) LogValue() slog.Value { return slog.StringValue(string(a.Kind)) }

// ParseNameValues reads lines of "name=value" (a textarea of cookies or form fields): blank
// lines are skipped, the name and value trimmed. The error, for field, names the line.
func ParseNameValues(field, text string) ([]NameValue, error) {
	var out []NameValue
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, &InvalidError{field, fmt.Sprintf("Line %d is not of the form name=value.", i+1)}
		}
		out = append(out, NameValue{name, value})
	}
	return out, nil
}

// SameOrigin reports whether an absolute http(s) URL is on origin (scheme://host[:port]),
// default ports and letter case aside.
func SameOrigin(rawURL, origin string) bool {
	u, err := url.Parse(rawURL)
	o, err2 := url.Parse(origin)
	if err != nil || err2 != nil || u.User != nil || u.Host == "" || o.Host == "" {
		return false
	}
	return OriginOf(u) == OriginOf(o)
}

// OriginOf is a URL's origin in one form: lower-case scheme and host, default port dropped.
func OriginOf(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// Validate checks an access setting for a site at origin: basic needs a user name (without a
// colon, RFC 7617) and a password; cookies need 1 to MaxAccessLines cookies whose names and
// values a Cookie header can carry (RFC 6265 §4.1.1); form needs a login URL on the site's
// origin, fields and the proof text. The errors are *InvalidErrors by form field.
func (a Access) Validate(origin string) error {
	var errs []error
	bad := func(field, msg string) { errs = append(errs, &InvalidError{field, msg}) }
	text := func(field, label, v string, max int) {
		switch {
		case v == "":
			bad(field, "Enter the "+label+".")
		case len(v) > max || !utf8.ValidString(v) || hasControl(v):
			bad(field, fmt.Sprintf("The %s must be at most %d bytes of text on one line.", label, max))
		}
	}
	lines := func(field string, nv []NameValue, cookie bool) {
		switch {
		case len(nv) == 0:
			bad(field, "Enter at least one line of name=value.")
			return
		case len(nv) > MaxAccessLines:
			bad(field, fmt.Sprintf("At most %d lines.", MaxAccessLines))
			return
		}
		for i, x := range nv {
			ok := len(x.Name) <= maxAccessName && len(x.Value) <= MaxAccessValue && utf8.ValidString(x.Name+x.Value) && !hasControl(x.Name+x.Value)
			if cookie {
				ok = ok && isToken(x.Name) && isCookieValue(x.Value)
			}
			if !ok {
				what := "a form field's name and value"
				if cookie {
					what = "a cookie's name (letters, digits, !#$%&'*+-.^_`|~) and value (no spaces, quotes, commas, semicolons or backslashes)"
				}
				bad(field, fmt.Sprintf("Line %d is not %s.", i+1, what))
				return
			}
		}
	}
	switch a.Kind {
	case AccessNone:
	case AccessBasic:
		text("username", "user name", a.Username, maxAccessName)
		if strings.Contains(a.Username, ":") {
			bad("username", "A basic auth user name cannot contain a colon (RFC 7617).")
		}
		text("password", "password", a.Password, MaxAccessValue)
	case AccessCookies:
		lines("cookies", a.Cookies, true)
	case AccessForm:
		u, err := url.Parse(a.LoginURL)
		switch {
		case a.LoginURL == "":
			bad("login_url", "Enter the address of the login form.")
		case len(a.LoginURL) > 2000 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Fragment != "":
			bad("login_url", "Enter the whole address of the login form, starting with "+origin+"/.")
		case !SameOrigin(a.LoginURL, origin):
			bad("login_url", "The login form must be on the site's own origin, "+origin+": its credentials go nowhere else.")
		}
		lines("fields", a.Fields, false)
		text("proof", "text the signed-in page shows", a.Proof, maxProof)
	default:
		bad("kind", "Choose none, basic auth, cookies or a login form.")
	}
	return errors.Join(errs...)
}

// isToken reports an RFC 7230 token: a cookie's name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// isCookieValue reports cookie-octets (RFC 6265 §4.1.1), unquoted.
func isCookieValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7F || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// AccessSealedFor is what a site's access setting is sealed bound to (the owner of
// platform.Keys.SealFor): the site and the origin it was given for. A setting copied to another
// site, or left behind when the site's domain changed (an editor pointing the site at a host of
// theirs to collect what an owner set), does not open: the credentials go to the origin they were
// given for, or nowhere.
func AccessSealedFor(siteID, origin string) string { return siteID + "\x00" + origin }

// SiteAccess is a site's access setting as stored: its kind, and the whole Access sealed
// (platform.Keys, purpose "site access", bound by AccessSealedFor) by the surface that took it.
// No store ever holds the Access opened. A site without a setting has Kind AccessNone.
type SiteAccess struct {
	SiteID    string
	Kind      AccessKind
	Sealed    string
	UpdatedAt time.Time
}

// Validate checks a stored setting: a known kind, sealed unless none.
func (a SiteAccess) Validate() error {
	switch {
	case !a.Kind.Valid():
		return &InvalidError{"kind", "Choose none, basic auth, cookies or a login form."}
	case a.Kind != AccessNone && a.Sealed == "":
		return &InvalidError{"kind", "An access setting is stored sealed."}
	}
	return nil
}
