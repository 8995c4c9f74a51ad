package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

// AccountStore is what sign-up, login and the settings page read and write: the account, its
// login attempts, its API keys and the OAuth clients it approved (the OAuth server keeps the rest).
type AccountStore interface {
	CreateUser(ctx context.Context, u store.User) error
	UserByEmail(ctx context.Context, email string) (store.User, error)
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
}

// accountForm is the signup and login form, echoed back (without the password) on errors.
type accountForm struct {
	Email  string
	Next   string
	Errors map[string]string
}

func (s *server) handleSignupPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if visitorFrom(r.Context()) != nil {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		s.render(w, r, http.StatusOK, "signup", page{Title: "Create your account", Data: accountForm{Next: safeNext(r.URL.Query().Get("next"))}})
	}))
}

// validateSignup checks an e-mail and password; the password rules are store.PasswordProblem's
// (NIST SP 800-63B: at least 8 characters, not blank, not a common password).
func validateSignup(email, password string) map[string]string {
	errs := map[string]string{}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		errs["email"] = "Enter an e-mail address like name@example.com."
	}
	if problem := store.PasswordProblem(password); problem != "" {
		errs["password"] = problem
	}
	return errs
}

// signupLinkTTL is how long a sign-up link works.
const signupLinkTTL = 24 * time.Hour

// signupSent is the page every valid sign-up gets, whether or not the e-mail has an account.
type signupSent struct {
	Email   string
	Logged  bool // no SMTP: the message is in the server's log
	Confirm string
}

// handleSignup answers alike whether or not the e-mail has an account, so that sign-up cannot
// tell anyone which e-mails have one: it shows "check your e-mail" and sends the address a
// message, which either carries the link that creates the account or tells the owner that the
// address already has one. The password is hashed either way, so both take as long, and the
// message is sent in the background.
func (s *server) handleSignup() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		form := accountForm{Email: strings.TrimSpace(r.PostForm.Get("email")), Next: safeNext(r.PostForm.Get("next"))}
		password := r.PostForm.Get("password")
		if form.Errors = validateSignup(form.Email, password); len(form.Errors) > 0 {
			s.render(w, r, http.StatusUnprocessableEntity, "signup", page{Title: "Create your account", Data: form})
			return
		}
		if ok, wait := s.signupIP.allow(clientIP(r)); !ok {
			s.tooMany(w, r, "signup", form, wait)
			return
		}
		hash, err := store.HashPassword(password, s.PasswordIterations)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		_, err = s.Accounts.UserByEmail(r.Context(), form.Email)
		switch {
		case err == nil:
			s.sendMail(r, form.Email, "You already have a SitePulse account",
				"Someone, perhaps you, asked to create a SitePulse account for this e-mail address, which already has an account.\n\n"+
					"To use it, log in: "+s.BaseURL+"/login\n\nIf it was not you, you can ignore this message: nothing was changed.\n")
		case errors.Is(err, store.ErrNotFound):
			token := s.sealSignup(signupClaim{Email: form.Email, Hash: hash, Next: form.Next, Expires: s.Now().Add(signupLinkTTL).Unix()})
			s.sendMail(r, form.Email, "Confirm your SitePulse account",
				"To finish creating your SitePulse account, open this link within 24 hours:\n\n"+
					s.BaseURL+"/signup/confirm?token="+token+"\n\nIf you did not ask for an account, you can ignore this message.\n")
		default:
			s.error(w, r, err, "")
			return
		}
		s.render(w, r, http.StatusOK, "signup_sent", page{Title: "Check your e-mail", Data: signupSent{Email: form.Email, Logged: s.Mail == nil}})
	})
}

// handleSignupConfirmPage shows the button that creates the account of a sign-up link: a GET
// changes nothing, since mail scanners open links.
func (s *server) handleSignupConfirmPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("token")
		c, problem := s.openSignup(token)
		if problem != "" {
			s.renderError(w, r, http.StatusBadRequest, problem)
			return
		}
		s.render(w, r, http.StatusOK, "signup_sent", page{Title: "Create your account", Data: signupSent{Email: c.Email, Confirm: token}})
	}))
}

// handleSignupConfirm creates the account of a sign-up link and signs it in.
func (s *server) handleSignupConfirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		c, problem := s.openSignup(r.PostForm.Get("token"))
		if problem != "" {
			s.renderError(w, r, http.StatusBadRequest, problem)
			return
		}
		u := store.User{ID: store.NewID(), Email: c.Email, PasswordHash: c.Hash, NotifyRegressions: true, CreatedAt: s.Now()}
		if err := s.Accounts.CreateUser(r.Context(), u); err != nil {
			if errors.Is(err, store.ErrConflict) { // only the mailbox's owner has the link
				form := accountForm{Email: c.Email, Next: c.Next, Errors: map[string]string{"form": "This e-mail address already has an account. Log in with its password."}}
				s.render(w, r, http.StatusConflict, "login", page{Title: "Log in", Data: form})
				return
			}
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("user signed up", "user", u.ID)
		if err := s.startSession(w, r, u.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.setDevice(w, u.ID)
		http.Redirect(w, r, safeNext(c.Next), http.StatusSeeOther)
	})
}

// sendMail sends a message in the background, so that the answer does not wait for the SMTP
// server (nor take longer for one kind of message). Without SMTP it is logged instead.
func (s *server) sendMail(r *http.Request, to, subject, body string) {
	if s.Mail == nil {
		s.Log.Info("e-mail (SMTP_ADDR not set, so logged instead of sent)", "to", to, "subject", subject, "body", body)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	go func() {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := s.Mail(ctx, to, subject, body); err != nil {
			s.Log.Warn("sending an e-mail failed", "subject", subject, "err", err)
		}
	}()
}

func (s *server) handleLoginPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := safeNext(r.URL.Query().Get("next"))
		if visitorFrom(r.Context()) != nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		s.render(w, r, http.StatusOK, "login", page{Title: "Log in", Data: accountForm{Next: next}})
	}))
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
		if form.Email == "" || password == "" || len(form.Email) > 254 || len(password) > 1024 {
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
		release, ok, wait, terr := s.takeLogin(r, form.Email, ip, s.device(r, u.ID))
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
				}
			}
		}
		// A fresh session id at every login; an older session of this browser is ended.
		if v, _ := s.loadVisitor(r); v != nil {
			s.Accounts.DeleteSession(r.Context(), v.Session.TokenHash)
		}
		if err := s.startSession(w, r, u.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.setDevice(w, u.ID)
		s.Log.Info("user logged in", "user", u.ID)
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
	pair := strings.ToLower(email) + "\x00" + ip
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

// tooMany answers a throttled form with 429, Retry-After and a sentence that names no account.
func (s *server) tooMany(w http.ResponseWriter, r *http.Request, name string, form accountForm, wait time.Duration) {
	secs := int(wait.Seconds()) + 1
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	form.Errors = map[string]string{"form": fmt.Sprintf("Too many attempts. Wait %d seconds and try again.", secs)}
	title := map[string]string{"login": "Log in", "signup": "Create your account"}[name]
	s.render(w, r, http.StatusTooManyRequests, name, page{Title: title, Data: form})
}

func (s *server) handleLogout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.endSession(w, r, visitorFrom(r.Context())); err != nil {
			s.error(w, r, err, "")
			return
		}
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}
