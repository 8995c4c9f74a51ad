package oauth

import (
	"net/url"
	"strings"
	"testing"
)

func TestCheckRedirectURI(t *testing.T) {
	tests := []struct {
		name, uri string
		ok        bool
	}{
		{"an https URI is accepted", "https://client.example/cb", true},
		{"an https URI with a query is accepted", "https://client.example/cb?tenant=1", true},
		{"http://localhost is accepted", "http://localhost", true},
		{"http://localhost with a port and path is accepted", "http://localhost:53682/callback", true},
		{"http://127.0.0.1 with a port is accepted", "http://127.0.0.1:8080/cb", true},
		{"http://[::1] with a port is accepted", "http://[::1]:3000/cb", true},
		{"a reverse-DNS app scheme with one slash is accepted", "com.example.app:/oauth/callback", true},
		{"an app scheme with an authority is accepted", "cursor://anysphere.cursor-mcp/oauth/callback", true},
		{"plain http to another host is refused", "http://evil.example/cb", false},
		{"http to a host that only starts like localhost is refused", "http://localhost.evil.example/cb", false},
		{"http to 127.0.0.1 as a subdomain is refused", "http://127.0.0.1.evil.example/cb", false},
		{"http with userinfo before a loopback host is refused", "http://127.0.0.1@evil.example/cb", false},
		{"javascript: is refused", "javascript:alert(1)", false},
		{"JavaScript: in another case is refused", "JavaScript://%0aalert(1)", false},
		{"data: is refused", "data:text/html,hi", false},
		{"file: is refused", "file:///etc/passwd", false},
		{"a fragment is refused", "https://client.example/cb#frag", false},
		{"an empty fragment is refused", "https://client.example/cb#", false},
		{"a wildcard is refused", "https://*.client.example/cb", false},
		{"userinfo is refused (https://good@evil)", "https://good.example@evil.example/cb", false},
		{"a backslash is refused", `https://good.example\@evil.example/cb`, false},
		{"a space is refused", "https://client.example/c b", false},
		{"a NUL byte is refused", "https://client.example/cb\x00", false},
		{"non-ASCII is refused", "https://clïent.example/cb", false},
		{"a relative URI is refused", "/callback", false},
		{"an empty string is refused", "", false},
		{"https without a host is refused", "https:///cb", false},
		{"an opaque app URI is refused", "myapp:callback", false},
		{"a URI of more than 2000 characters is refused", "https://client.example/" + strings.Repeat("a", 2000), false},
		{"a loopback port that is not a number is refused", "http://localhost:abc/cb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why := checkRedirectURI(tt.uri)
			if (why == "") != tt.ok {
				t.Errorf("checkRedirectURI(%q) = %q, want ok=%v", tt.uri, why, tt.ok)
			}
		})
	}
}

func TestMatchRedirectURI(t *testing.T) {
	const reg = "https://good.example/callback"
	tests := []struct {
		name, registered, requested string
		match                       bool
	}{
		{"the registered string matches itself", reg, reg, true},
		{"a trailing slash does not match", reg, reg + "/", false},
		{"an extra path segment does not match", reg, reg + "/x", false},
		{"an added query does not match", reg, reg + "?x=1", false},
		{"a case change in the path does not match", reg, "https://good.example/Callback", false},
		{"a case change in the host does not match", reg, "https://GOOD.example/callback", false},
		{"a case change in the scheme does not match", reg, "HTTPS://good.example/callback", false},
		{"a fragment does not match", reg, reg + "#x", false},
		{"the userinfo trick does not match", reg, "https://good.example@evil.example/callback", false},
		{"javascript: does not match", reg, "javascript:alert(1)", false},
		{"a percent-encoded spelling does not match", reg, "https://good.example/%63allback", false},
		{"an explicit default port does not match", reg, "https://good.example:443/callback", false},
		{"a registered query must be sent as registered", reg + "?a=1", reg + "?a=1", true},
		{"a loopback redirect may use another port", "http://127.0.0.1/callback", "http://127.0.0.1:49152/callback", true},
		{"a loopback redirect registered with a port may use another", "http://127.0.0.1:8080/callback", "http://127.0.0.1:9/callback", true},
		{"localhost may use another port", "http://localhost:3000/cb", "http://localhost:3001/cb", true},
		{"[::1] may use another port", "http://[::1]:3000/cb", "http://[::1]:4000/cb", true},
		{"a loopback redirect may not change its path", "http://127.0.0.1/callback", "http://127.0.0.1:5000/other", false},
		{"a loopback redirect may not add a query", "http://127.0.0.1/callback", "http://127.0.0.1:5000/callback?x", false},
		{"a loopback redirect may not switch to localhost", "http://127.0.0.1/callback", "http://localhost:5000/callback", false},
		{"a loopback port may not hide userinfo", "http://127.0.0.1/callback", "http://127.0.0.1:1@evil.example/callback", false},
		{"an https port may not vary", "https://good.example:8443/cb", "https://good.example:9443/cb", false},
		{"an app scheme must match exactly", "com.example.app:/cb", "com.example.app:/cb/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchRedirectURI([]string{tt.registered}, tt.requested); got != tt.match {
				t.Errorf("match(%q, %q) = %v, want %v", tt.registered, tt.requested, got, tt.match)
			}
		})
	}
}

func TestWithParams(t *testing.T) {
	p := url.Values{"code": {"ac_1"}, "state": {"a b&c"}}
	tests := []struct{ name, uri, want string }{
		{"a URI without a query gets one", "https://a.example/cb", "https://a.example/cb?code=ac_1&state=a+b%26c"},
		{"an existing query is kept byte for byte", "https://a.example/cb?x=%2F&y", "https://a.example/cb?x=%2F&y&code=ac_1&state=a+b%26c"},
		{"a URI ending in ? gets no extra separator", "https://a.example/cb?", "https://a.example/cb?code=ac_1&state=a+b%26c"},
		{"an app scheme gets a query too", "com.example.app:/cb", "com.example.app:/cb?code=ac_1&state=a+b%26c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withParams(tt.uri, p); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzMatchRedirectURI checks that matching never panics and only ever accepts the registered
// string itself or a loopback URI differing from it only by port.
func FuzzMatchRedirectURI(f *testing.F) {
	for _, s := range [][2]string{
		{"https://good.example/cb", "https://good.example/cb"},
		{"http://127.0.0.1/cb", "http://127.0.0.1:8080/cb"},
		{"http://[::1]:1/cb", "http://[::1]:2/cb"},
		{"http://localhost/cb", "http://localhost:1@evil/cb"},
		{"https://good.example/cb", `https://good.example\@evil/cb`},
		{"com.example.app:/cb", "com.example.app:/cb#x"},
		{"https://good.example/cb", "https://good.example/%63b"},
		{"https://good.example/cb", "https://GOOD.example/cb"},
		{"https://xn--bcher-kva.example/cb", "https://bücher.example/cb"},
		{"http://127.0.0.1/cb", "http://127.0.0.1:80@evil.test/cb"},
		{"http://127.0.0.1/cb", "http://127.0.0.1:99999999999999999999/cb"},
		{"http://[::1]/cb", "http://[::1%25eth0]:1/cb"},
		{"http://127.0.0.1/cb", "http://127.0.0.1:1/cb\x00"},
		{"https://good.example/cb", "https://good.example/cb/../cb"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, registered, requested string) {
		checkRedirectURI(registered)
		checkRedirectURI(requested)
		if !matchRedirectURI([]string{registered}, requested) || registered == requested {
			return
		}
		rh, rr, ok1 := splitLoopback(registered)
		qh, qr, ok2 := splitLoopback(requested)
		if !ok1 || !ok2 || rh != qh || rr != qr {
			t.Fatalf("%q matched %q", requested, registered)
		}
		u, err := url.Parse(requested)
		if err != nil || u.User != nil || u.Hostname() != strings.Trim(qh, "[]") {
			t.Fatalf("%q matched %q but parses to host %q", requested, registered, u.Hostname())
		}
	})
}
