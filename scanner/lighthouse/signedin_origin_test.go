package lighthouse

import "testing"

// TestAnswerAuth is the private-pages origin rule (issue 44, attack 6): a basic auth challenge
// gets the site's credentials only from the site's own origin, once per URL; the same URL asked
// again, another host, scheme, port, a subdomain, a redirect's target elsewhere and a proxy's
// challenge are all cancelled.
func TestAnswerAuth(t *testing.T) {
	const origin = "https://members.test"
	for _, c := range []struct {
		name                string
		url, challenge, src string
		askedBefore         bool
		wantGive, wantOurs  bool
	}{
		{"the site's origin, first ask", "https://members.test/basic/members", "https://members.test", "Server", false, true, true},
		{"the site's origin spelt with its default port and capitals", "https://Members.TEST:443/x", "https://members.test:443", "Server", false, true, true},
		{"the same URL asked again: the site refused them", "https://members.test/basic/members", "https://members.test", "Server", true, false, true},
		{"another host", "https://cdn.thirdparty.test/challenge.png", "https://cdn.thirdparty.test", "Server", false, false, false},
		{"a subdomain", "https://static.members.test/pixel.png", "https://static.members.test", "Server", false, false, false},
		{"a parent domain", "https://test/x", "https://test", "Server", false, false, false},
		{"another scheme: an http downgrade", "http://members.test/basic/members", "http://members.test", "Server", false, false, false},
		{"another port of the same host", "https://members.test:8443/basic/members", "https://members.test:8443", "Server", false, false, false},
		{"a proxy's challenge for the site's URL", "https://members.test/basic/members", "https://members.test", "Proxy", false, false, false},
		{"the site's URL, a challenge from elsewhere", "https://members.test/basic/members", "https://cdn.thirdparty.test", "Server", false, false, false},
		{"elsewhere's URL, a challenge claiming the site", "https://cdn.thirdparty.test/x", "https://members.test", "Server", false, false, false},
		{"a user name in the URL", "https://evil@members.test/x", "https://members.test", "Server", false, false, false},
		{"a host that merely starts like the site's", "https://members.test.evil.test/x", "https://members.test.evil.test", "Server", false, false, false},
		{"no URL", "", "", "Server", false, false, false},
	} {
		give, ours := answerAuth(origin, c.url, c.challenge, c.src, c.askedBefore)
		if give != c.wantGive || ours != c.wantOurs {
			t.Errorf("%s: give %v, ours %v; want %v, %v", c.name, give, ours, c.wantGive, c.wantOurs)
		}
	}
}
