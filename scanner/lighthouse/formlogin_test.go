package lighthouse

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"sitepulse/scanner/netguard"
	"sitepulse/store"
)

// loginSite answers a login form at several paths, each failing in its own way but /login.
func loginSite(offsite string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			switch r.URL.Path {
			case "/broken":
				http.Error(w, "down", http.StatusInternalServerError)
				return
			case "/welcome":
				if c, err := r.Cookie("sid"); err == nil && c.Value == "sid-value" {
					w.Write([]byte("<p>Signed in as Ada &amp; friends</p>"))
					return
				}
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			if r.URL.Path != "/nocookie" {
				http.SetCookie(w, &http.Cookie{Name: "pre", Value: "from-the-form-page", Path: "/"})
			}
			w.Write([]byte(`<form method=post><input type='hidden' name="csrf" value="tok&amp;en"><INPUT name=user><input type="hidden" name=next value=/account></form>`))
			return
		}
		r.ParseForm()
		ok := r.PostForm.Get("csrf") == "tok&en" && r.PostForm.Get("next") == "/account" && r.PostForm.Get("user") == "ada" &&
			r.PostForm.Get("password") == "form-secret-1" && r.Header.Get("Origin") != ""
		if pre, err := r.Cookie("pre"); r.URL.Path != "/nocookie" && (err != nil || pre.Value != "from-the-form-page") {
			ok = false
		}
		switch {
		case !ok:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte("Wrong password"))
		case r.URL.Path == "/offsite":
			http.Redirect(w, r, offsite+"/steal", http.StatusSeeOther)
		case r.URL.Path == "/nocookie":
			w.Write([]byte("Signed in as Ada &amp; friends"))
		default:
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sid-value", Path: "/", HttpOnly: true})
			http.Redirect(w, r, "/welcome", http.StatusSeeOther)
		}
	})
}

// A login form is signed in to through the guard: the page's hidden inputs (a CSRF token) and
// cookies go with the owner's fields, redirects stay on the site's origin, and the proof text
// (HTML-escaped in the answer too) decides. A failure says why, starting "signed-in audit
// failed", and never quotes a field or the proof text.
func TestFormLogin(t *testing.T) {
	var offsiteHits atomic.Int64
	offsite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { offsiteHits.Add(1) }))
	defer offsite.Close()
	site := httptest.NewServer(loginSite(offsite.URL))
	defer site.Close()
	l := New(Config{Guard: netguard.Guard{Exempt: netip.MustParseAddrPort(site.Listener.Addr().String())}})
	origin := site.URL
	access := func(path, password string) store.Access {
		return store.Access{Kind: store.AccessForm, LoginURL: origin + path, Proof: "Signed in as Ada & friends",
			Fields: []store.NameValue{{Name: "user", Value: "ada"}, {Name: "password", Value: password}}}
	}

	s, err := l.SignIn(context.Background(), origin, access("/login", "form-secret-1"))
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	var got []string
	for _, c := range s.cookies {
		got = append(got, c.Name+"="+c.Value)
	}
	if strings.Join(got, " ") != "pre=from-the-form-page sid=sid-value" && strings.Join(got, " ") != "sid=sid-value pre=from-the-form-page" {
		t.Errorf("cookies = %v, want the form page's and the session's", got)
	}

	for _, tt := range []struct {
		name, path, password, want string
	}{
		{"a wrong password", "/login", "wrong-secret-2", "signed-in audit failed: the answer to the login form /login does not show the proof text"},
		{"a redirect to another origin", "/offsite", "form-secret-1", "signed-in audit failed: the login form /offsite could not be reached: it redirected to another origin"},
		{"a broken login form", "/broken", "form-secret-1", "signed-in audit failed: the login form /broken answered 500 Internal Server Error"},
		{"a login that sets no cookie", "/nocookie", "form-secret-1", "signed-in audit failed: the login form /nocookie set no cookie for the site's host"},
		{"a login form on another origin", "/x", "form-secret-1", "signed-in audit failed: the access setting is not valid: The login form must be on the site's own origin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := access(tt.path, tt.password)
			if tt.path == "/x" {
				a.LoginURL = offsite.URL + "/login"
			}
			_, err := l.SignIn(context.Background(), origin, a)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to start %q", err, tt.want)
			}
			for _, secret := range []string{tt.password, "Signed in as", "ada"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q quotes %q", err, secret)
				}
			}
		})
	}
	if n := offsiteHits.Load(); n != 0 {
		t.Errorf("the other origin received %d requests", n)
	}
}

// A signed-in audit refuses a page of another origin before anything runs.
func TestSignedInAuditStaysOnTheOrigin(t *testing.T) {
	l := New(Config{Command: "/nonexistent/lighthouse"})
	s, err := l.SignIn(context.Background(), "https://shop.example", store.Access{Kind: store.AccessCookies,
		Cookies: []store.NameValue{{Name: "session", Value: "abc"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"https://evil.example/", "http://shop.example/", "https://shop.example.evil.example/", "https://shop.example:8443/"} {
		if _, err := s.Audit(context.Background(), u, store.StrategyMobile); err == nil || !strings.HasPrefix(err.Error(), SignInFailed) {
			t.Errorf("audit of %s: %v, want a sign-in failure", u, err)
		}
	}
}
