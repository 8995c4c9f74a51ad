package handlers

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The third red team's attacks on invitations, workspaces and sign-up (issue 34), each through
// the browser as the attacker made it, on both stores. Each test fails on the code before the
// issue and passes after.

// workspaceOf creates a workspace as b and answers its path.
func (b *browser) workspaceOf(name string) string {
	b.t.Helper()
	resp, _ := b.post("/workspaces", url.Values{"csrf_token": {b.csrf}, "name": {name}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("create workspace: %d", resp.StatusCode)
	}
	return strings.TrimSuffix(resp.Header.Get("Location"), "?done=created")
}

// invite makes an invitation link in the workspace at wsPath as b and answers its path.
func (b *browser) invite(wsPath, email, role string) string {
	b.t.Helper()
	resp, body := b.postFollow(wsPath+"/invitations", url.Values{"csrf_token": {b.csrf}, "email": {email}, "role": {role}})
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("invite %s: %d %.300s", email, resp.StatusCode, body)
	}
	m := inviteLinkRe.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no invitation link shown: %.400s", body)
	}
	return "/invite/" + m[1]
}

// A removed co-owner's pending owner invitation grants nothing, so the account it names cannot
// then remove the last owner; nor does a demoted owner's.
func TestRemovedCoOwnersInvitationGrantsNothing(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			ann, co, mallory, eve := ts.browser(t), ts.browser(t), ts.browser(t), ts.browser(t)
			ann.signup("ann@example.com")
			co.signup("co@example.com")
			mallory.signup("mallory@example.com")
			eve.signup("eve@example.com")
			ws := ann.workspaceOf("Agency")
			resp, _ := co.post(ann.invite(ws, "co@example.com", "owner"), url.Values{"csrf_token": {co.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			// The co-owner, about to be removed, leaves an owner invitation behind.
			planted := co.invite(ws, "mallory@example.com", "owner")
			resp, _ = ann.post(ws+"/members/"+ts.storeUser(t, "co@example.com")+"/remove", url.Values{"csrf_token": {ann.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			if pending, _ := ts.store.Invitations(context.Background(), strings.TrimPrefix(ws, "/workspaces/"), ts.now); len(pending) != 0 {
				t.Errorf("the removed co-owner's invitation is still pending: %+v", pending)
			}
			resp, _ = mallory.post(planted, url.Values{"csrf_token": {mallory.csrf}})
			wantStatus(t, resp, http.StatusGone)
			// Nor can its invitee remove the last owner.
			resp, _ = mallory.post(ws+"/members/"+ts.storeUser(t, "ann@example.com")+"/remove", url.Values{"csrf_token": {mallory.csrf}})
			wantStatus(t, resp, http.StatusNotFound)
			if _, page := ann.get(ws); !strings.Contains(page, "ann@example.com") {
				t.Error("the owner is no longer a member")
			}

			// A demoted owner's invitations end too.
			resp, _ = co.post(ann.invite(ws, "co@example.com", "owner"), url.Values{"csrf_token": {co.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)
			planted = co.invite(ws, "eve@example.com", "owner")
			resp, _ = ann.post(ws+"/members/"+ts.storeUser(t, "co@example.com"), url.Values{"csrf_token": {ann.csrf}, "role": {"editor"}})
			wantStatus(t, resp, http.StatusSeeOther)
			resp, _ = eve.post(planted, url.Values{"csrf_token": {eve.csrf}})
			wantStatus(t, resp, http.StatusGone)
		})
	}
}

// The holder of a personal workspace cannot be removed from it, demoted or leave it: a
// co-owner's removal left them without their sites and keys, and their home page answered 500.
func TestPersonalWorkspaceHolderStays(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			ann, co := ts.browser(t), ts.browser(t)
			ann.signup("ann@example.com")
			co.signup("co@example.com")
			annID := ts.storeUser(t, "ann@example.com")
			home := "/workspaces/" + annID
			resp, _ := ann.post("/sites", url.Values{"csrf_token": {ann.csrf}, "name": {"Ann's shop"}, "domain": {"shop.ann.test"}})
			wantStatus(t, resp, http.StatusSeeOther)
			resp, _ = co.post(ann.invite(home, "co@example.com", "owner"), url.Values{"csrf_token": {co.csrf}})
			wantStatus(t, resp, http.StatusSeeOther)

			resp, body := co.post(home+"/members/"+annID+"/remove", url.Values{"csrf_token": {co.csrf}})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "personal workspace")
			resp, _ = co.post(home+"/members/"+annID, url.Values{"csrf_token": {co.csrf}, "role": {"viewer"}})
			wantStatus(t, resp, http.StatusConflict)
			resp, body = ann.post(home+"/leave", url.Values{"csrf_token": {ann.csrf}})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "your personal workspace")

			resp, body = ann.get("/")
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "Ann&#39;s shop")
			// The co-owner's page shows no button that would try.
			_, body = co.get(home)
			if strings.Contains(body, "/members/"+annID+"/remove") || strings.Contains(body, `id="role-`+annID+`"`) {
				t.Error("the co-owner is offered to remove or demote the holder")
			}
		})
	}
}

// noWorkspaces is a store in which the visitor is a member of no workspace (an account a
// co-owner removed from its home before the holder rule, or one whose workspaces all went).
type noWorkspaces struct{ store.Store }

func (noWorkspaces) WorkspacesOf(context.Context, string) ([]store.Workspace, error) {
	return []store.Workspace{}, nil
}
func (noWorkspaces) Workspace(context.Context, string, string) (store.Workspace, error) {
	return store.Workspace{}, store.NotFound("workspace")
}
func (noWorkspaces) SitesOf(context.Context, string) ([]store.Site, error) {
	return []store.Site{}, nil
}

// An account with no workspace gets pages, never a 500.
func TestAccountWithNoWorkspaceGetsAPage(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, noWorkspaces{be.Open(t)})
			b := ts.browser(t)
			b.signup("lost@example.com")
			for _, path := range []string{"/", "/settings", "/sites/new", "/reports"} {
				resp, body := b.get(path)
				wantStatus(t, resp, http.StatusOK)
				if path == "/" {
					contains(t, body, "You are in no workspace")
					contains(t, body, `action="/workspaces"`)
				}
			}
		})
	}
}

// mailCounter counts the messages a server sends, by recipient, and keeps them.
type mailCounter struct {
	mu   sync.Mutex
	sent map[string][]sentMail
}

func (c *mailCounter) send(_ context.Context, to, subject, body string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent == nil {
		c.sent = map[string][]sentMail{}
	}
	c.sent[to] = append(c.sent[to], sentMail{to, subject, body})
	return nil
}

// to waits until at least atLeast messages went to a recipient (they are sent in the
// background) and answers them.
func (c *mailCounter) to(t *testing.T, who string, atLeast int) []sentMail {
	t.Helper()
	var got []sentMail
	storetest.WaitFor(t, fmt.Sprintf("%d e-mails to %s", atLeast, who), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		got = append([]sentMail(nil), c.sent[who]...)
		return len(got) >= atLeast
	})
	return got
}

// Invite, revoke, invite again sent one stranger 25 e-mails in 2 s, with a subject the
// attacker wrote. Now a recipient gets store.InviteMailsPerEmail.Burst invitation e-mails a
// day, whatever the workspaces and inviters (revoked ones counted); the subject carries no
// text of the inviter's; and a workspace makes store.InvitesPerWorkspace.Burst invitations a
// day, after which it is told so (429).
func TestInvitationMailFlood(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			mail := &mailCounter{}
			st := be.Open(t)
			ts := newTestServerWith(t, st, func(d *Deps) { d.Mail = mail.send })
			owner := ts.browser(t)
			owner.mail = nil
			resp, _ := owner.post("/signup", url.Values{"email": {"owner@example.com"}})
			wantStatus(t, resp, http.StatusSeeOther)
			owner.confirm(mail.to(t, "owner@example.com", 1)[0], testPassword)
			owner.refreshCSRF()
			ws := owner.workspaceOf("URGENT verify your bank at evil.example")
			const victim = "victim@example.com"
			statuses, mailed := map[int]int{}, 0
			for range 25 {
				resp, body := owner.postFollow(ws+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {victim}, "role": {"viewer"}})
				statuses[resp.StatusCode]++
				if strings.Contains(body, "It was e-mailed to them") {
					mailed++
				}
				for _, m := range regexp.MustCompile(`/invitations/([0-9a-f-]{36})/revoke`).FindAllStringSubmatch(body, -1) {
					owner.post(ws+"/invitations/"+m[1]+"/revoke", url.Values{"csrf_token": {owner.csrf}})
				}
			}
			if statuses[http.StatusOK] != 25 {
				t.Errorf("invitations: %v, want 25 made (a team may invite someone again)", statuses)
			}
			// The page says which invitations were e-mailed; the sends run in the background.
			got := mail.to(t, victim, store.InviteMailsPerEmail.Burst)
			if len(got) != store.InviteMailsPerEmail.Burst || mailed != len(got) {
				t.Errorf("the stranger got %d invitation e-mails (%d said sent), want %d", len(got), mailed, store.InviteMailsPerEmail.Burst)
			}
			for _, m := range got {
				if strings.Contains(m.subject, "URGENT") || strings.Contains(m.subject, "evil") {
					t.Errorf("the subject carries the inviter's text: %q", m.subject)
				}
				if !strings.Contains(m.body, `"URGENT verify your bank at evil.example"`) {
					t.Errorf("the body does not quote the workspace's name: %q", m.body)
				}
			}
			// Past the recipient's e-mails the link is shown to be sent by hand.
			_, body := owner.postFollow(ws+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {victim}, "role": {"viewer"}})
			contains(t, body, "Send it to them")

			// The workspace's own cap: 50 a day, then 429 with Retry-After.
			made := 26
			for i := 0; made < store.InvitesPerWorkspace.Burst; i++ {
				resp, body := owner.postFollow(ws+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {fmt.Sprintf("p%d@example.com", i)}, "role": {"viewer"}})
				wantStatus(t, resp, http.StatusOK)
				made++
				for _, m := range regexp.MustCompile(`/invitations/([0-9a-f-]{36})/revoke`).FindAllStringSubmatch(body, -1) {
					owner.post(ws+"/invitations/"+m[1]+"/revoke", url.Values{"csrf_token": {owner.csrf}})
				}
			}
			resp, body = owner.postFollow(ws+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {"one-more@example.com"}, "role": {"viewer"}})
			wantStatus(t, resp, http.StatusTooManyRequests)
			contains(t, body, "invitations today")
			if resp.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			// A new workspace of the same inviter does not start over: the inviter's cap holds.
			other := owner.workspaceOf("Another")
			resp, _ = owner.postFollow(other+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {"fresh@example.com"}, "role": {"viewer"}})
			wantStatus(t, resp, http.StatusTooManyRequests)
			// A day later the caps start again.
			ts.now = ts.now.Add(24*time.Hour + time.Second)
			resp, _ = owner.postFollow(other+"/invitations", url.Values{"csrf_token": {owner.csrf}, "email": {"fresh@example.com"}, "role": {"viewer"}})
			wantStatus(t, resp, http.StatusOK)
		})
	}
}

// An address spelt with a long s (U+017F, which Unicode case folding maps to s) is another
// address: it does not accept an invitation for sam@, and on the memory store it neither logs in
// to sam's account nor gets a login-throttle count of its own for it.
func TestLongSIsAnotherAddress(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServerWith(t, be.Open(t), func(d *Deps) {
				d.AccountLogins = store.LoginLimit{Burst: 3, Window: 24 * time.Hour, Every: time.Hour}
			})
			owner, longS := ts.browser(t), ts.browser(t)
			owner.signup("owner@example.com")
			link := owner.invite("/workspaces/"+ts.storeUser(t, "owner@example.com"), "sam@example.com", "editor")
			owner.mail.next(t, "sam@example.com") // the invitation's e-mail
			longS.signup("\u017fam@example.com")
			resp, _ := longS.post(link, url.Values{"csrf_token": {longS.csrf}})
			wantStatus(t, resp, http.StatusForbidden)
			_, body := longS.get(link)
			if strings.Contains(body, `action="`+link+`"`) {
				t.Error("the invitation page offers ſam@ to accept sam@'s invitation")
			}

			// sue@ has an account, ſue@ none.
			ts.browser(t).signup("sue@example.com")
			h := ts.Config.Handler
			for i := range 3 { // sue's account cap, from three addresses
				if got := loginWith(h, fmt.Sprintf("203.0.113.%d:1", i+1), "sue@example.com", "guess guess").Code; got != http.StatusUnauthorized {
					t.Fatalf("guess %d: %d", i, got)
				}
			}
			if got := loginWith(h, "203.0.113.9:1", "sue@example.com", testPassword).Code; got != http.StatusTooManyRequests {
				t.Fatalf("sue past the cap: %d, want 429", got)
			}
			// ſue@ with sue's password from a fresh address: not sue's account.
			if got := loginWith(h, "203.0.113.10:1", "\u017fue@example.com", testPassword).Code; got != http.StatusUnauthorized {
				t.Errorf("ſue@ with sue's password past sue's cap: %d, want 401 (no such account)", got)
			}
		})
	}
}

// postForm submits the first POST form of a page whose action starts with prefix, with its
// hidden fields and the given values, as a browser would.
func (b *browser) postForm(page, prefix string, values url.Values) (*http.Response, string) {
	b.t.Helper()
	forms := regexp.MustCompile(`(?s)<form method="post" action="([^"]+)"[^>]*>(.*?)</form>`).FindAllStringSubmatch(page, -1)
	for _, f := range forms {
		action := html.UnescapeString(f[1])
		if !strings.HasPrefix(action, prefix) {
			continue
		}
		form := url.Values{}
		for _, h := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(f[2], -1) {
			form.Set(h[1], html.UnescapeString(h[2]))
		}
		for k, v := range values {
			if strings.Contains(f[2], `name="`+k+`"`) {
				form[k] = v
			}
		}
		return b.post(action, form)
	}
	b.t.Fatalf("no form posting to %s on %.400s", prefix, page)
	return nil, ""
}

// A stranger signed up with the victim's address and a password of the stranger's; when the
// victim followed the e-mailed link, the account was made with the stranger's password. Now the
// password is chosen on the link's page, by whoever holds the mailbox.
func TestSignupCannotBePreHijacked(t *testing.T) {
	for _, be := range storetest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ts := newTestServer(t, be.Open(t))
			stranger, victim := ts.browser(t), ts.browser(t)
			resp, _ := stranger.post("/signup", url.Values{"email": {"victim@example.com"}, "password": {"the stranger's password"}})
			wantStatus(t, resp, http.StatusSeeOther)
			m := victim.mail.next(t, "victim@example.com")
			link := regexp.MustCompile(`https?://[^/\s]+(/signup/confirm[/?]\S+)`).FindStringSubmatch(m.body)
			if link == nil {
				t.Fatalf("no link in %q", m.body)
			}
			resp, page := victim.get(link[1])
			wantStatus(t, resp, http.StatusOK)
			resp, _ = victim.postForm(page, "/signup/confirm", url.Values{"password": {"the victim's own password"}})
			wantStatus(t, resp, http.StatusSeeOther)

			h := ts.Config.Handler
			if got := loginWith(h, "198.51.100.1:1", "victim@example.com", "the stranger's password").Code; got != http.StatusUnauthorized {
				t.Errorf("the stranger's password logs in to the victim's account: %d", got)
			}
			if got := loginWith(h, "198.51.100.2:1", "victim@example.com", "the victim's own password").Code; got != http.StatusSeeOther {
				t.Errorf("the victim's password: %d, want 303", got)
			}
		})
	}
}
