package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

// AccountStore is what sign-up, login, recovery and the settings page read and write: the
// account, its login attempts, sessions, e-mailed links, API keys and the OAuth clients it
// approved (the OAuth server keeps the rest).
type AccountStore interface {
	CreateUser(ctx context.Context, u store.User) error
	UserByEmail(ctx context.Context, email string) (store.User, error)
	UserByID(ctx context.Context, id string) (store.User, error)
	SetPasswordHash(ctx context.Context, userID, hash string) error
	TakeLoginAttempt(ctx context.Context, key string, now time.Time, limit store.LoginLimit) (ok bool, wait time.Duration, err error)
	ClearLoginAttempts(ctx context.Context, key string) error
	DeleteSession(ctx context.Context, tokenHash string) error
	APIKeys(ctx context.Context, userID string) ([]store.APIKey, error)
	CreateAPIKey(ctx context.Context, k store.APIKey) error
	RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error
	SetNotifyRegressions(ctx context.Context, userID string, on bool) error
	Consents(ctx context.Context, userID string) ([]store.Consent, error)
	RevokeConsent(ctx context.Context, userID, clientID string, now time.Time) error
	// Recovering, changing and deleting the account (recovery.go, account.go).
	store.Accounts
}

// accountForm is the signup and login form, echoed back (without the password) on errors.
type accountForm struct {
	Email  string
	Next   string
	Errors map[string]string
	// Token is the e-mailed link's token a confirm or reset form posts back to its own path.
	Token string
	// SSO is the single sign-on provider's name, when one is configured.
	SSO string
	// WorkSSO: workspaces have their own providers, so the login page asks for a work e-mail.
	WorkSSO bool
}

func (s *server) handleSignupPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if visitorFrom(r.Context()) != nil {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if r.URL.Query().Get("sent") == "1" { // where a sign-up's POST leads
			s.render(w, r, http.StatusOK, "signup_sent", page{Title: "Check your e-mail", Data: signupSent{Logged: s.Mail == nil}})
			return
		}
		s.render(w, r, http.StatusOK, "signup", page{Title: "Create your account", Data: accountForm{Next: safeNext(r.URL.Query().Get("next"))}})
	}))
}

// emailProblem is the message of an e-mail field that is not a bare address.
const emailProblem = "Enter an e-mail address like name@example.com."

// signupLinkTTL is how long a sign-up link works.
const signupLinkTTL = 24 * time.Hour

// signupSent is the page every valid sign-up gets, whether or not the e-mail has an account.
type signupSent struct {
	Logged bool // no SMTP: the message is in the server's log
}

// handleSignup asks for an e-mail address only: the password is chosen by whoever follows the
// e-mailed link, so that nobody can sign up with someone else's address and a password of
// their own for the owner to confirm (a pre-hijacked account). It answers alike whether or not
// the e-mail has an account, so that sign-up cannot tell anyone which e-mails have one: it
// shows "check your e-mail" and sends the address a message, which either carries the link
// that creates the account or tells the owner that the address already has one (with the
// "Forgot password" link). Messages go in the background, within the address's daily budget.
func (s *server) handleSignup() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		form := accountForm{Email: strings.TrimSpace(r.PostForm.Get("email")), Next: safeNext(r.PostForm.Get("next"))}
		email, ok := s.mailForm(w, r, "signup", form)
		if !ok {
			return
		}
		// An address of a domain whose workspace requires single sign-on signs up through the
		// provider, not with a password that workspace would refuse (docs/sso.md).
		if bound, err := s.ssoBindsDomain(r.Context(), email); err != nil {
			s.error(w, r, err, "")
			return
		} else if bound {
			http.Redirect(w, r, "/login/sso?"+url.Values{"email": {email}, "next": {form.Next}}.Encode(), http.StatusSeeOther)
			return
		}
		_, err := s.Accounts.UserByEmail(r.Context(), email)
		switch {
		case err == nil:
			s.sendAccountMail(r, email, "You already have a SitePulse account",
				"Someone, perhaps you, asked to create a SitePulse account for this e-mail address, which already has one.\n\n"+
					"To use it, log in: "+s.BaseURL+"/login\n"+
					"Forgot its password? Choose a new one: "+s.BaseURL+"/password/forgot\n\n"+
					"If it was not you, you can ignore this message: nothing was changed.\n")
		case errors.Is(err, store.ErrNotFound):
			token := s.sealSignup(signupClaim{Email: email, Next: form.Next, Expires: s.Now().Add(signupLinkTTL).Unix()})
			s.sendAccountMail(r, email, "Confirm your SitePulse account",
				"To create your SitePulse account, open this link within 24 hours and choose its password:\n\n"+
					s.BaseURL+"/signup/confirm/"+token+"\n\nIf you did not ask for an account, you can ignore this message.\n")
		default:
			s.error(w, r, err, "")
			return
		}
		// A redirect, so that a reload sends no second message.
		http.Redirect(w, r, "/signup?sent=1", http.StatusSeeOther)
	})
}

// mailForm reads the e-mail address of a form that e-mails it (sign-up, "Forgot password"),
// under the requester's throttle (mailIP), and answers a failure itself on the form's page
// (name): 422 for what is not an address, 429 past the throttle.
func (s *server) mailForm(w http.ResponseWriter, r *http.Request, name string, form accountForm) (string, bool) {
	email, ok := store.ParseEmail(form.Email)
	if !ok {
		form.Errors = map[string]string{"email": emailProblem}
		s.render(w, r, http.StatusUnprocessableEntity, name, page{Title: formTitles[name], Data: form})
		return "", false
	}
	if ok, wait := s.mailIP.allow(clientIP(r)); !ok {
		s.tooMany(w, r, name, form, wait)
		return "", false
	}
	return email, true
}

// signupLink reads the sign-up link of the path and answers its failure itself: 400 for a
// link that is not one of ours, 410 for an expired one, 409 once the address has an account.
func (s *server) signupLink(w http.ResponseWriter, r *http.Request) (signupClaim, bool) {
	w.Header().Set("Referrer-Policy", "no-referrer") // the token is in the path
	c, problem := s.openSignup(r.PathValue("token"))
	switch problem {
	case "":
	case signupExpired:
		s.renderError(w, r, http.StatusGone, problem)
		return c, false
	default:
		s.renderError(w, r, http.StatusBadRequest, problem)
		return c, false
	}
	switch _, err := s.Accounts.UserByEmail(r.Context(), c.Email); {
	case err == nil:
		s.render(w, r, http.StatusConflict, "login", page{Title: "Log in", Data: accountForm{Email: c.Email, Next: c.Next,
			Errors: map[string]string{"form": "This e-mail address already has an account. Log in with its password, or choose a new one with \"Forgot password\"."}}})
		return c, false
	case !errors.Is(err, store.ErrNotFound):
		s.error(w, r, err, "")
		return c, false
	}
	return c, true
}

// handleSignupConfirmPage is where the sign-up link leads: the form that chooses the account's
// password. A GET changes nothing, since mail scanners open links.
func (s *server) handleSignupConfirmPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.signupLink(w, r)
		if !ok {
			return
		}
		s.render(w, r, http.StatusOK, "signup_confirm", page{Title: "Choose your password", Data: accountForm{Email: c.Email, Token: r.PathValue("token")}})
	}))
}

// handleSignupConfirm creates the account of a sign-up link with the password chosen on its
// page, and signs it in.
func (s *server) handleSignupConfirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		c, ok := s.signupLink(w, r)
		if !ok {
			return
		}
		password := r.PostForm.Get("password")
		if problem := store.PasswordProblem(password); problem != "" {
			form := accountForm{Email: c.Email, Token: r.PathValue("token"), Errors: map[string]string{"password": problem}}
			s.render(w, r, http.StatusUnprocessableEntity, "signup_confirm", page{Title: "Choose your password", Data: form})
			return
		}
		hash, err := store.HashPassword(password, s.PasswordIterations)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		u := store.User{ID: store.NewID(), Email: c.Email, PasswordHash: hash, NotifyRegressions: true, CreatedAt: s.Now()}
		if err := s.Accounts.CreateUser(r.Context(), u); err != nil {
			if errors.Is(err, store.ErrConflict) { // the link was followed twice at once
				s.signupLink(w, r)
				return
			}
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("user signed up", "user", u.ID)
		if _, err := s.startSession(w, r, u.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.setDevice(w, u)
		http.Redirect(w, r, safeNext(c.Next), http.StatusSeeOther)
	})
}

func (s *server) handleLoginPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.URL.Query().Get("next"))
		if visitorFrom(r.Context()) != nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		s.render(w, r, http.StatusOK, "login", page{Title: "Log in", Flash: loginFlashes[r.URL.Query().Get("done")], Data: accountForm{Next: next}})
	}))
}

// loginFlashes are what the login page says after an account change signed the visitor out.
var loginFlashes = map[string]string{
	"password-reset":  "Your password was changed, and every session of the account was ended. Log in with the new password.",
	"account-deleted": "Your account was deleted, with its personal workspace, keys and sessions.",
	"email-changed":   "The account's e-mail address was changed. Log in with the new address.",
}

// dummyHash is compared against when the e-mail is unknown, so a login takes as long whether
// or not the account exists.
var dummyHash = sync.OnceValue(func() string {
	h, _ := store.HashPassword("not a password", store.PasswordIterations)
	return h
})

func (s *server) handleLogin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		form := accountForm{Email: strings.TrimSpace(r.PostForm.Get("email")), Next: safeNext(r.PostForm.Get("next"))}
		password := r.PostForm.Get("password")
		if form.Email == "" || password == "" || len(form.Email) > store.MaxEmail || len(password) > store.MaxPassword {
			form.Errors = map[string]string{"form": "Enter your e-mail and password."}
			s.render(w, r, http.StatusUnprocessableEntity, "login", page{Title: "Log in", Data: form})
			return
		}
		// Tokens are taken before the slow password check, so parallel guesses cannot all be
		// checked: per address; then, from a browser that signed in to this account before
		// (its device cookie), per device; else per (account, address), so a stranger's
		// failures do not lock the owner out from elsewhere, and per account across every
		// address in the store, which every replica shares. A success gives them back.
		ip := clientIP(r)
		if ok, wait := s.loginIP.allow(ip); !ok {
			s.tooMany(w, r, "login", form, wait)
			return
		}
		u, err := s.Accounts.UserByEmail(r.Context(), form.Email)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.loginIP.refund(ip)
			s.error(w, r, err, "")
			return
		}
		known := err == nil
		release, ok, wait, terr := s.takeLogin(r, form.Email, ip, s.device(r, u))
		if terr != nil {
			s.loginIP.refund(ip)
			s.error(w, r, terr, "")
			return
		}
		if !ok {
			s.loginIP.refund(ip)
			s.tooMany(w, r, "login", form, wait)
			return
		}
		stored := u.PasswordHash
		if !known {
			stored = dummyHash()
		}
		ok, rehash := store.CheckPassword(stored, password, s.PasswordIterations)
		if !known || !ok {
			s.Log.Info("login failed", "remote", ip)
			if known {
				// A wrong password for a member's account goes to their workspaces' logs; an
				// e-mail with no account is in no workspace, and is not recorded at all.
				s.auditAccount(r.Context(), u.ID, u.Email, store.LogSignInFailed, map[string]string{"reason": "wrong password"})
			}
			form.Errors = map[string]string{"form": "That e-mail and password do not match an account."}
			s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Log in", Data: form})
			return
		}
		s.loginIP.refund(ip)
		release()
		if rehash {
			if h, err := store.HashPassword(password, s.PasswordIterations); err == nil {
				if err := s.Accounts.SetPasswordHash(r.Context(), u.ID, h); err != nil {
					s.Log.Warn("upgrade password hash", "user", u.ID, "err", err)
				} else {
					u.PasswordHash = h // the device cookie is bound to the hash
				}
			}
		}
		// A fresh session id at every login; an older session of this browser is ended.
		if v, _ := s.loadVisitor(r); v != nil {
			s.Accounts.DeleteSession(r.Context(), v.Session.TokenHash)
		}
		if _, err := s.startSession(w, r, u.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.setDevice(w, u)
		s.Log.Info("user logged in", "user", u.ID)
		s.auditAccount(r.Context(), u.ID, u.Email, store.LogSignIn, map[string]string{"method": "password"})
		http.Redirect(w, r, form.Next, http.StatusSeeOther)
	})
}

// takeLogin takes the tokens of a login attempt beyond the address's: the device's when the
// browser carries a device cookie of this account (nonce), else the (account, address) pair's
// and the account's in the store. ok false says how long to wait; release, called after the
// right password, gives them back.
func (s *server) takeLogin(r *http.Request, email, ip, nonce string) (release func(), ok bool, wait time.Duration, err error) {
	if nonce != "" {
		ok, wait := s.deviceLimit.allow(nonce)
		return func() { s.deviceLimit.forget(nonce) }, ok, wait, nil
	}
	pair := store.CanonicalEmail(email) + "\x00" + ip
	if ok, wait := s.loginPair.allow(pair); !ok {
		return nil, false, wait, nil
	}
	key := accountKey(email)
	ok, wait, err = s.Accounts.TakeLoginAttempt(r.Context(), key, s.Now(), s.AccountLogins)
	if err != nil || !ok {
		s.loginPair.refund(pair)
		return nil, false, wait, err
	}
	return func() {
		s.loginPair.forget(pair)
		if err := s.Accounts.ClearLoginAttempts(r.Context(), key); err != nil {
			s.Log.Warn("clear login attempts", "err", err)
		}
	}, true, 0, nil
}

// formTitles are the titles of the signed-out forms' pages, by template.
var formTitles = map[string]string{"login": "Log in", "signup": "Create your account", "forgot": "Forgot your password?", "reset": "Choose a new password"}

// tooMany answers a throttled form with 429, Retry-After and a sentence that names no account.
func (s *server) tooMany(w http.ResponseWriter, r *http.Request, name string, form accountForm, wait time.Duration) {
	secs := int(wait.Seconds()) + 1
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	form.Errors = map[string]string{"form": fmt.Sprintf("Too many attempts. Wait %d seconds and try again.", secs)}
	s.render(w, r, http.StatusTooManyRequests, name, page{Title: formTitles[name], Data: form})
}

func (s *server) handleLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		if err := s.endSession(w, r, v); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogSignOut, nil)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}
