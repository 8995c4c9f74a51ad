package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

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
		u := store.User{ID: store.NewID(), Email: form.Email, PasswordHash: hash, NotifyRegressions: true, CreatedAt: s.Now()}
		if err := s.Store.CreateUser(r.Context(), u); err != nil {
			if errors.Is(err, store.ErrConflict) {
				form.Errors = map[string]string{"email": "An account with this e-mail already exists. Log in instead."}
				s.render(w, r, http.StatusConflict, "signup", page{Title: "Create your account", Data: form})
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
		http.Redirect(w, r, form.Next, http.StatusSeeOther)
	})
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
		u, err := s.Store.UserByEmail(r.Context(), form.Email)
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
				if err := s.Store.SetPasswordHash(r.Context(), u.ID, h); err != nil {
					s.Log.Warn("upgrade password hash", "user", u.ID, "err", err)
				}
			}
		}
		// A fresh session id at every login; an older session of this browser is ended.
		if v, _ := s.loadVisitor(r); v != nil {
			s.Store.DeleteSession(r.Context(), v.Session.TokenHash)
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
	ok, wait, err = s.Store.TakeLoginAttempt(r.Context(), key, s.Now(), s.AccountLogins)
	if err != nil || !ok {
		s.loginPair.refund(pair)
		return nil, false, wait, err
	}
	return func() {
		s.loginPair.forget(pair)
		if err := s.Store.ClearLoginAttempts(r.Context(), key); err != nil {
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
