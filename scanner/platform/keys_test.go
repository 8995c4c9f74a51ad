package platform

import (
	"strings"
	"testing"
)

const (
	keyA = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	keyB = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
)

func TestKeysSealAndOpen(t *testing.T) {
	old, err := ParseKeys(keyA)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Seal("wf-token-secret", "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "wf-token-secret") {
		t.Fatalf("sealed text holds the token: %s", sealed)
	}
	again, _ := old.Seal("wf-token-secret", "user-1")
	if again == sealed {
		t.Error("two seals of one token are equal: the nonce is not random")
	}
	rotated, err := ParseKeys(keyB + ", " + keyA)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		keys   *Keys
		sealed string
		user   string
		want   string
	}{
		{"the sealing key opens it", old, sealed, "user-1", "wf-token-secret"},
		{"after rotation the old key still opens it", rotated, sealed, "user-1", "wf-token-secret"},
		{"another user's row does not open it", old, sealed, "user-2", ""},
		{"a ring without its key does not open it", mustKeys(t, keyB), sealed, "user-1", ""},
		{"a flipped byte does not open", old, sealed[:len(sealed)-2] + flip(sealed[len(sealed)-2]) + sealed[len(sealed)-1:], "user-1", ""},
		{"garbage does not open", old, "nonsense", "user-1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.keys.Open(tt.sealed, tt.user)
			if got != tt.want || (tt.want == "") != (err != nil) {
				t.Errorf("Open = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// A rotated ring seals under its first key.
	fresh, _ := rotated.Seal("t", "u")
	if _, err := old.Open(fresh, "u"); err == nil {
		t.Error("the old key opened a token sealed after rotation")
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func mustKeys(t *testing.T, spec string) *Keys {
	k, err := ParseKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseKeysRefusesBadKeys(t *testing.T) {
	for _, spec := range []string{"", " , ", "c2hvcnQ=", "not base64 !!", keyA + ",short"} {
		if _, err := ParseKeys(spec); err == nil {
			t.Errorf("ParseKeys(%q) accepted", spec)
		}
	}
}

func TestPublishedPaths(t *testing.T) {
	pages := []Page{
		{PublishedPath: "/"},
		{PublishedPath: "/about"},
		{PublishedPath: "/draft", Draft: true},
		{PublishedPath: "/old", Archived: true},
		{PublishedPath: "/blog/post", CollectionID: []byte(`"6390c49774a71f12831a08e3"`)},
		{PublishedPath: "/pricing", CollectionID: []byte(`null`)},
		{PublishedPath: "/about"},
		{PublishedPath: ""},
		{PublishedPath: "fast"},
	}
	got := strings.Join(PublishedPaths(pages), " ")
	if want := "/ /about /pricing /fast"; got != want {
		t.Errorf("PublishedPaths = %q, want %q", got, want)
	}
}

func TestSiteDomain(t *testing.T) {
	tests := []struct {
		site Site
		want string
	}{
		{Site{ShortName: "acme", CustomDomains: []CustomDomain{{URL: "www.acme.com"}, {URL: "acme.com"}}}, "www.acme.com"},
		{Site{ShortName: "acme", CustomDomains: []CustomDomain{{URL: "https://Acme.com/"}}}, "acme.com"},
		{Site{ShortName: "Acme-Blog"}, "acme-blog.webflow.io"},
		{Site{ShortName: "acme", CustomDomains: []CustomDomain{{URL: ""}}}, "acme.webflow.io"},
	}
	for _, tt := range tests {
		if got := tt.site.Domain(); got != tt.want {
			t.Errorf("Domain(%+v) = %q, want %q", tt.site, got, tt.want)
		}
	}
}
