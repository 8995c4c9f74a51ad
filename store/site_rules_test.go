package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"sitepulse/store"
)

func TestNormalizeDomain(t *testing.T) {
	public, private := store.SiteRules{}, store.SiteRules{AllowPrivate: true}
	for _, tt := range []struct {
		name, in string
		rules    store.SiteRules
		want     string // "" means refused
		message  string // part of the refusal
	}{
		{"a host stays", "shop.example.com", public, "shop.example.com", ""},
		{"upper case is lowered", "SHOP.Example.COM", public, "shop.example.com", ""},
		{"https and a trailing slash are stripped", "https://shop.example.com/", public, "shop.example.com", ""},
		{"a pasted URL is reduced to its host", "https://shop.example.com/blog/post?utm=x#top", public, "shop.example.com", ""},
		{"a pasted host with a path is reduced to its host", "shop.example.com/pricing", public, "shop.example.com", ""},
		{"a trailing dot is dropped", "shop.example.com.", public, "shop.example.com", ""},
		{"the default port is dropped", "https://shop.example.com:443", public, "shop.example.com", ""},
		{"another port stays", "HTTPS://Shop.Example.com:8443/", public, "shop.example.com:8443", ""},
		{"http stays, since it changes what is fetched", "http://shop.example.com/", public, "http://shop.example.com", ""},
		{"a Unicode domain becomes punycode", "bücher.de", public, "xn--bcher-kva.de", ""},
		{"a Unicode URL becomes punycode", "https://MÜNCHEN.example/", public, "xn--mnchen-3ya.example", ""},
		{"an all-Unicode label", "他们为什么不说中文.example", public, "xn--ihqwcrb4cv8a8dqg056pqjye.example", ""},
		{"ideographic full stops are dots", "例え。テスト", public, "xn--r8jz45g.xn--zckzah", ""},
		{"userinfo is refused", "https://user:pass@shop.example.com/", public, "", "user name or password"},
		{"bare userinfo is refused", "admin@shop.example.com", public, "", "user name or password"},
		{"another scheme is refused", "ftp://shop.example.com", public, "", "http and https"},
		{"javascript is refused", "javascript://alert(1)", public, "", "http and https"},
		{"spaces are refused", "shop example.com", public, "", "not a host name"},
		{"an empty domain is refused", "  ", public, "", "Enter the site"},
		{"a bad port is refused", "shop.example.com:99999", public, "", "port"},
		{"a label too long is refused", strings.Repeat("a", 64) + ".com", public, "", "not a host name"},
		{"a leading hyphen is refused", "-shop.example.com", public, "", "not a host name"},
		{"a control character is refused", "shop\r\n.example.com", public, "", "Enter the site"},
		{"localhost is refused", "localhost:8080", public, "", "SCAN_ALLOW_PRIVATE"},
		{"a .localhost name is refused", "app.localhost", public, "", "SCAN_ALLOW_PRIVATE"},
		{"an IPv4 literal is refused", "http://127.0.0.1:8700", public, "", "SCAN_ALLOW_PRIVATE"},
		{"a public IPv4 literal is refused too", "93.184.216.34", public, "", "SCAN_ALLOW_PRIVATE"},
		{"an IPv6 literal is refused", "[::1]:8080", public, "", "SCAN_ALLOW_PRIVATE"},
		{"an empty label is refused", "a..example", public, "", "not a host name"},
		{"a scheme alone is refused", "https://", public, "", "not a host name"},
		{"an underscore is refused", "exa_mple.com", public, "", "not a host name"},
		{"port 0 is refused", "example.com:0", public, "", "port"},
		{"a javascript: URL is refused", "javascript:alert(1)", public, "", "port"},
		{"localhost with SCAN_ALLOW_PRIVATE", "localhost:8080", private, "localhost:8080", ""},
		{"an IP origin with SCAN_ALLOW_PRIVATE", "http://127.0.0.1:8700/", private, "http://127.0.0.1:8700", ""},
		{"an IPv6 origin with SCAN_ALLOW_PRIVATE", "http://[::1]:8700", private, "http://[::1]:8700", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.NormalizeDomain(tt.in, tt.rules)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("NormalizeDomain(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				if again, err := store.NormalizeDomain(got, tt.rules); again != got || err != nil {
					t.Errorf("not idempotent: %q gives %q, %v", got, again, err)
				}
				return
			}
			if err == nil || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("NormalizeDomain(%q) = %q, %v; want an ErrInvalid saying %q", tt.in, got, err, tt.message)
			}
			if f := store.FieldErrors(err); f["domain"] == "" {
				t.Errorf("FieldErrors = %v, want a domain message", f)
			}
		})
	}
}

func TestSiteValidate(t *testing.T) {
	valid := func() store.Site {
		return store.Site{Name: " Shop ", Domain: "HTTPS://Shop.Example.com/", Pages: []string{" / ", "/pricing", "", "/pricing"}}
	}
	s := valid()
	s.Normalize()
	if err := s.Validate(store.SiteRules{}); err != nil {
		t.Fatalf("a valid site: %v", err)
	}
	if s.Name != "Shop" || s.Domain != "shop.example.com" || strings.Join(s.Pages, ",") != "/,/pricing" || s.Schedule != store.ScheduleOff {
		t.Errorf("normalised to %+v", s)
	}
	many := make([]string, 80)
	for i := range many {
		many[i] = "/p" + strings.Repeat("x", i)
	}
	for _, tt := range []struct {
		name   string
		change func(*store.Site)
		rules  store.SiteRules
		field  string
		say    string
	}{
		{"an empty name", func(s *store.Site) { s.Name = " " }, store.SiteRules{}, "name", "1 to 100"},
		{"a name of 100,000 characters", func(s *store.Site) { s.Name = strings.Repeat("n", 100_000) }, store.SiteRules{}, "name", "1 to 100"},
		{"a name with a newline", func(s *store.Site) { s.Name = "Shop\nAdmin" }, store.SiteRules{}, "name", "must not contain a control character (U+000A)"},
		{"a name with a right-to-left override", func(s *store.Site) { s.Name = "Invoice\u202egnp.exe" }, store.SiteRules{}, "name", "U+202E"},
		{"a name padded with Hangul fillers", func(s *store.Site) { s.Name = "Shop\u3164\u3164" }, store.SiteRules{}, "name", "U+3164"},
		{"a name of invalid UTF-8", func(s *store.Site) { s.Name = "Shop\xff" }, store.SiteRules{}, "name", "UTF-8"},
		{"a domain with userinfo", func(s *store.Site) { s.Domain = "https://u:p@shop.example.com/x?y" }, store.SiteRules{}, "domain", "user name"},
		{"localhost", func(s *store.Site) { s.Domain = "localhost" }, store.SiteRules{}, "domain", "SCAN_ALLOW_PRIVATE"},
		{"a path with CR/LF", func(s *store.Site) { s.Pages = []string{"/a\r\nSet-Cookie: x=1"} }, store.SiteRules{}, "pages", "single “/”"},
		{"a path to another host", func(s *store.Site) { s.Pages = []string{"//evil.example/"} }, store.SiteRules{}, "pages", "single “/”"},
		{"a path with a backslash", func(s *store.Site) { s.Pages = []string{`/\evil.example`} }, store.SiteRules{}, "pages", "single “/”"},
		{"a path without a slash", func(s *store.Site) { s.Pages = []string{"pricing"} }, store.SiteRules{}, "pages", "single “/”"},
		{"a path of 2 KB and more", func(s *store.Site) { s.Pages = []string{"/" + strings.Repeat("a", 2000)} }, store.SiteRules{}, "pages", "single “/”"},
		{"80 paths with the default cap", func(s *store.Site) { s.Pages = many }, store.SiteRules{}, "pages", "At most 50 page paths (MAX_PAGES_PER_SCAN)"},
		{"6 paths with a cap of 5", func(s *store.Site) { s.Pages = many[:6] }, store.SiteRules{MaxPages: 5}, "pages", "At most 5 page paths"},
		{"an unknown schedule", func(s *store.Site) { s.Schedule = "hourly" }, store.SiteRules{}, "schedule", "daily or weekly"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			s := valid()
			tt.change(&s)
			s.Normalize()
			err := s.Validate(tt.rules)
			if !errors.Is(err, store.ErrInvalid) || store.Classify(err) != store.ErrInvalid {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if got := store.FieldErrors(err)[tt.field]; !strings.Contains(got, tt.say) {
				t.Errorf("%s message %q, want it to say %q (all: %v)", tt.field, got, tt.say, store.FieldErrors(err))
			}
		})
	}
	t.Run("several fields in trouble are each told", func(t *testing.T) {
		s := store.Site{Name: "", Domain: "localhost", Pages: []string{"x"}}
		s.Normalize()
		err := s.Validate(store.SiteRules{})
		for _, e := range []error{err, fmt.Errorf("create site: %w", err)} {
			got := store.FieldErrors(e)
			if len(got) != 3 || got["name"] == "" || got["domain"] == "" || got["pages"] == "" {
				t.Errorf("FieldErrors(%v) = %v, want name, domain and pages", e, got)
			}
		}
	})
}

// A form of a quarter of a million short page paths (what a 1 MiB body holds) is normalised
// and refused at once, not in quadratic time.
func BenchmarkNormalizeManyPages(b *testing.B) {
	pages := make([]string, 250_000)
	for i := range pages {
		pages[i] = fmt.Sprintf("/%d", i)
	}
	for b.Loop() {
		s := store.Site{Name: "Shop", Domain: "shop.example.com", Pages: pages}
		s.Normalize()
		if s.Validate(store.SiteRules{}) == nil {
			b.Fatal("250,000 paths accepted")
		}
	}
}

func TestDisplayDomain(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"xn--bcher-kva.de", "bücher.de"},
		{"www.xn--mnchen-3ya.example", "www.münchen.example"},
		{"example.com", "example.com"},
		{"xn--pple-43d.com", "xn--pple-43d.com"}, // Cyrillic а in Latin "apple": a look-alike stays ASCII
		{"xn--zz.com", "xn--zz.com"},             // not well-formed
	} {
		if got := store.DisplayDomain(tc.in); got != tc.want {
			t.Errorf("DisplayDomain(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
