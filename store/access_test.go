package store

import (
	"fmt"
	"strings"
	"testing"
)

// An access setting is checked field by field against the site's origin, and its text never
// shows a credential.
func TestAccessValidate(t *testing.T) {
	const origin = "https://shop.example"
	cookies := func(lines string) []NameValue { nv, _ := ParseNameValues("cookies", lines); return nv }
	many := strings.Repeat("a=b\n", MaxAccessLines+1)
	for _, tt := range []struct {
		name  string
		a     Access
		field string // "" when valid
	}{
		{"none", Access{Kind: AccessNone}, ""},
		{"basic", Access{Kind: AccessBasic, Username: "ada", Password: "pw"}, ""},
		{"basic without a password", Access{Kind: AccessBasic, Username: "ada"}, "password"},
		{"basic with a colon in the user name", Access{Kind: AccessBasic, Username: "a:b", Password: "pw"}, "username"},
		{"basic with a newline in the password", Access{Kind: AccessBasic, Username: "ada", Password: "p\nw"}, "password"},
		{"cookies", Access{Kind: AccessCookies, Cookies: cookies("session=abc123\n__Host-id = x.y-z ")}, ""},
		{"no cookie", Access{Kind: AccessCookies}, "cookies"},
		{"a cookie value with a semicolon", Access{Kind: AccessCookies, Cookies: cookies("session=a;b")}, "cookies"},
		{"a cookie name with a space", Access{Kind: AccessCookies, Cookies: []NameValue{{"my session", "x"}}}, "cookies"},
		{"too many cookies", Access{Kind: AccessCookies, Cookies: cookies(many)}, "cookies"},
		{"form", Access{Kind: AccessForm, LoginURL: "https://SHOP.example:443/login?next=/", Fields: cookies("user=ada"), Proof: "Sign out"}, ""},
		{"form on another host", Access{Kind: AccessForm, LoginURL: "https://login.shop.example/", Fields: cookies("user=ada"), Proof: "Sign out"}, "login_url"},
		{"form over http", Access{Kind: AccessForm, LoginURL: "http://shop.example/login", Fields: cookies("user=ada"), Proof: "Sign out"}, "login_url"},
		{"form with a user in the URL", Access{Kind: AccessForm, LoginURL: "https://u:p@shop.example/login", Fields: cookies("user=ada"), Proof: "Sign out"}, "login_url"},
		{"form without proof", Access{Kind: AccessForm, LoginURL: "https://shop.example/login", Fields: cookies("user=ada")}, "proof"},
		{"an unknown kind", Access{Kind: "header"}, "kind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fields := FieldErrors(tt.a.Validate(origin))
			if tt.field == "" && len(fields) > 0 || tt.field != "" && fields[tt.field] == "" {
				t.Errorf("errors %v, want one for %q", fields, tt.field)
			}
		})
	}
	if _, err := ParseNameValues("fields", "user=ada\nno equals sign"); err == nil || !strings.Contains(err.Error(), "Line 2") {
		t.Errorf("a line without '=': %v", err)
	}
	a := Access{Kind: AccessBasic, Username: "ada", Password: "hunter2"}
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), a.LogValue().String()} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "ada") {
			t.Errorf("%q shows a credential", s)
		}
	}
	back, err := DecodeAccess(a.Encode())
	if err != nil || back.Password != "hunter2" || back.Username != "ada" {
		t.Errorf("DecodeAccess(Encode) = %v %v", back, err)
	}
	if _, err := DecodeAccess(`{"kind":"header"}`); err == nil {
		t.Error("an unknown kind decoded")
	}
}
