package lighthouse

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"

	"sitepulse/store"
)

// Limits of a form login.
const (
	loginTimeout   = 30 * time.Second
	maxLoginPage   = 2 << 20 // bytes of a login page or its answer read
	maxLoginHidden = 20      // hidden inputs of the login page carried over
)

// formLogin signs in to the site's login form before a scan, through the outbound guard: it
// loads the form (for the cookies and hidden inputs, such as a CSRF token, it comes with), posts
// the fields to it, follows redirects only on the site's origin, and looks for the proof text in
// the answer. It answers the cookies the site set for its host; its errors start with
// SignInFailed and carry no secret (neither the fields nor the proof text).
func (l *Runner) formLogin(ctx context.Context, origin string, a store.Access) ([]store.NameValue, error) {
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	jar, _ := cookiejar.New(nil) // no public suffix list: the cookies are read back for one host only
	client := l.cfg.Guard.Client()
	client.Jar, client.Timeout = jar, loginTimeout
	if l.cfg.Dial != nil {
		client.Transport.(*http.Transport).DialContext = l.cfg.Dial
	}
	next := client.CheckRedirect
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !store.SameOrigin(req.URL.String(), origin) {
			return errors.New("it redirected to another origin")
		}
		return next(req, via)
	}
	login := pathOf(a.LoginURL)
	failed := func(format string, args ...any) error {
		return errors.New(SignInFailed + fmt.Sprintf(format, args...))
	}
	do := func(req *http.Request) (body string, err error) {
		resp, err := client.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // its message repeats the URL
			}
			return "", failed("the login form %s could not be reached: %v", login, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxLoginPage))
		if resp.StatusCode >= 400 && resp.StatusCode != 401 && resp.StatusCode != 403 && resp.StatusCode != 422 {
			return "", failed("the login form %s answered %s", pathOf(resp.Request.URL.String()), resp.Status)
		}
		return string(b), nil
	}

	get, err := http.NewRequestWithContext(ctx, http.MethodGet, a.LoginURL, nil)
	if err != nil {
		return nil, failed("the login form's address is not valid")
	}
	page, err := do(get)
	if err != nil {
		return nil, err
	}
	form := url.Values{}
	for _, h := range hiddenInputs(page) {
		form.Set(h.Name, h.Value)
	}
	for _, f := range a.Fields { // the owner's fields win over the page's
		form.Set(f.Name, f.Value)
	}
	post, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.LoginURL, strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", origin) // what a browser sends, for sites that check it against CSRF
	post.Header.Set("Referer", a.LoginURL)
	answer, err := do(post)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(answer, a.Proof) && !strings.Contains(html.UnescapeString(answer), a.Proof) {
		return nil, failed("the answer to the login form %s does not show the proof text: check the fields (user name, password) and the proof text", login)
	}
	u, _ := url.Parse(origin + "/")
	var cookies []store.NameValue
	for _, c := range jar.Cookies(u) {
		cookies = append(cookies, store.NameValue{Name: c.Name, Value: c.Value})
	}
	if len(cookies) == 0 {
		return nil, failed("the login form %s set no cookie for the site's host, so no page can be audited signed in", login)
	}
	return cookies, nil
}

var (
	inputTag  = regexp.MustCompile(`(?is)<input\b[^>]*>`)
	attribute = regexp.MustCompile(`(?is)([a-z][a-z0-9_:-]*)\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+)`)
)

// hiddenInputs are the hidden inputs of a page's forms (a CSRF token, a redirect target), at
// most maxLoginHidden.
func hiddenInputs(page string) []store.NameValue {
	var out []store.NameValue
	for _, tag := range inputTag.FindAllString(page, 200) {
		attrs := map[string]string{}
		for _, m := range attribute.FindAllStringSubmatch(tag, -1) {
			v := strings.Trim(m[2], `"'`)
			attrs[strings.ToLower(m[1])] = html.UnescapeString(v)
		}
		if strings.EqualFold(attrs["type"], "hidden") && attrs["name"] != "" {
			out = append(out, store.NameValue{Name: attrs["name"], Value: attrs["value"]})
			if len(out) == maxLoginHidden {
				break
			}
		}
	}
	return out
}
