package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"sitepulse/store"
)

// "Forgot password" (OWASP Forgot Password cheat sheet, NIST SP 800-63B §6): the login page
// links to a form that asks for an e-mail address and answers alike whether or not it has an
// account. An account's address gets a link that is random (256 bits), stored hashed, single
// use and valid store.ResetLinkTTL; following it chooses a new password and ends every session
// and device cookie of the account. Requests are throttled like logins: per address of the
// requester (mailIP), and per e-mail address in the store (accountMails).

// tokenPage marks the answer of a page whose path carries a secret: no Referer leaves it, and
// no cache keeps it.
func tokenPage(w http.ResponseWriter) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
}

// handleForgotPage is the "Forgot password" form, or (?sent=1, where its POST leads) what
// happens next.
func (s *server) handleForgotPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sent") == "1" {
			s.render(w, r, http.StatusOK, "forgot_sent", page{Title: "Check your e-mail", Data: signupSent{Logged: s.Mail == nil}})
			return
		}
		s.render(w, r, http.StatusOK, "forgot", page{Title: "Forgot your password?", Data: accountForm{}})
	}))
}

// handleForgot e-mails a reset link to an account's address, and nothing to another; both
// take one of the address's account e-mails and answer with the same redirect.
func (s *server) handleForgot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		email, ok := s.mailForm(w, r, "forgot", accountForm{Email: strings.TrimSpace(r.PostForm.Get("email"))})
		if !ok {
			return
		}
		u, err := s.Accounts.UserByEmail(r.Context(), email)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.error(w, r, err, "")
			return
		}
		if s.takeMail(r, "account mail", email, accountMails) && err == nil {
			token, hash := store.NewSecret("rst_")
			now := s.Now()
			if err := s.Accounts.CreateAccountLink(r.Context(), store.AccountLink{TokenHash: hash, UserID: u.ID, Purpose: store.LinkReset,
				CreatedAt: now, ExpiresAt: now.Add(store.ResetLinkTTL)}); err != nil {
				s.error(w, r, err, "")
				return
			}
			s.sendMail(r, u.Email, "Choose a new SitePulse password",
				"Someone, perhaps you, asked to choose a new password for the SitePulse account of this address.\n\n"+
					"To choose one, open this link within an hour; it works once:\n\n"+s.BaseURL+"/password/reset/"+token+"\n\n"+
					"Choosing a new password signs the account out everywhere. If you did not ask, ignore this message: the password stays as it is.\n")
			s.Log.Info("password reset link sent", "user", u.ID)
			// Asked by whoever typed the address: the actor is the account, not the asker.
			s.auditAccount(r.Context(), u.ID, u.Email, store.LogRecoveryRequest, nil)
		}
		http.Redirect(w, r, "/password/forgot?sent=1", http.StatusSeeOther)
	})
}

// accountLink reads the e-mailed link of the path ({token}, with its purpose's prefix) and
// answers its failure itself: 404 for a link that does not exist, 410 for one used or expired.
func (s *server) accountLink(w http.ResponseWriter, r *http.Request, purpose store.LinkPurpose) (store.AccountLink, string, bool) {
	tokenPage(w)
	token := r.PathValue("token")
	prefix, what := "rst_", "password reset"
	if purpose == store.LinkEmail {
		prefix, what = "eml_", "e-mail confirmation"
	}
	l, err := store.AccountLink{}, error(store.ErrNotFound)
	if strings.HasPrefix(token, prefix) && len(token) <= maxBearerLen {
		l, err = s.Accounts.AccountLink(r.Context(), store.HashSecret(token), purpose, s.Now())
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.renderError(w, r, http.StatusNotFound, "This "+what+" link is not valid. Copy the whole link from the e-mail, or ask for a new one.")
	case errors.Is(err, store.ErrGone):
		s.renderError(w, r, http.StatusGone, "This "+what+" link was used or has expired: it works once, and not for long. Ask for a new one.")
	case err != nil:
		s.error(w, r, err, "")
	default:
		return l, token, true
	}
	return l, token, false
}

// endGrants ends the OAuth grants of the account made since its password was last set (the
// apps an intruder who had the password or a session may have connected) and answers a
// paragraph naming them for the e-mail or page that tells the owner, "" when there were none.
// Apps connected before stay: the owner connected them while the password was theirs alone.
func (s *server) endGrants(r *http.Request, userID string, since, now time.Time) string {
	ended, err := s.Accounts.EndGrantsSince(r.Context(), userID, since, now)
	if err != nil {
		s.Log.Error("end grants since the last password", "user", userID, "err", err)
		return "The apps connected since the password was last set could not be disconnected: disconnect them in your settings.\n\n"
	}
	if len(ended) == 0 {
		return ""
	}
	names := make([]string, len(ended))
	for i, c := range ended {
		names[i] = "“" + c.ClientName + "”"
	}
	s.Log.Info("grants since the last password ended", "user", userID, "apps", len(ended))
	return "The apps connected to the account since its password was last set were disconnected, their tokens revoked: " +
		strings.Join(names, ", ") + ". If one was yours, connect it again from the app.\n\n"
}

// handleResetPage is where a reset link leads: the form that chooses the new password. A GET
// changes nothing, since mail scanners open links.
func (s *server) handleResetPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, token, ok := s.accountLink(w, r, store.LinkReset); ok {
			s.render(w, r, http.StatusOK, "reset", page{Title: "Choose a new password", Data: accountForm{Token: token}})
		}
	}))
}

// handleReset sets the password a reset link's page chose: the link is used up, every session
// of the account ends (this browser's too: it logs in with the new password), and its device
// cookies stop counting, since they are bound to the old password.
func (s *server) handleReset() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		if ok, wait := s.loginIP.allow(clientIP(r)); !ok {
			s.tooMany(w, r, "reset", accountForm{Token: r.PathValue("token")}, wait)
			return
		}
		link, token, ok := s.accountLink(w, r, store.LinkReset)
		if !ok {
			return
		}
		before, err := s.Accounts.UserByID(r.Context(), link.UserID) // when the password was set before
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		password := r.PostForm.Get("password")
		if problem := store.PasswordProblem(password); problem != "" {
			s.render(w, r, http.StatusUnprocessableEntity, "reset", page{Title: "Choose a new password",
				Data: accountForm{Token: token, Errors: map[string]string{"password": problem}}})
			return
		}
		hash, err := store.HashPassword(password, s.PasswordIterations)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		now := s.Now()
		u, err := s.Accounts.ResetPassword(r.Context(), store.HashSecret(token), hash, now)
		if err != nil { // used by a parallel request in between
			s.error(w, r, err, "This password reset link is not valid. Ask for a new one.")
			return
		}
		// The owner proved the mailbox: the failed logins counted against the account go.
		if err := s.Accounts.ClearLoginAttempts(r.Context(), accountKey(u.Email)); err != nil {
			s.Log.Warn("clear login attempts", "err", err)
		}
		s.clearSessionCookie(w)
		s.forgetDevice(w)
		s.sendMail(r, u.Email, "Your SitePulse password was changed",
			"The password of the SitePulse account of this address was changed with a reset link, and every session of the account was ended.\n\n"+
				s.endGrants(r, u.ID, before.PasswordChangedAt, now)+
				"If it was not you, choose a new password now: "+s.BaseURL+"/password/forgot\n"+
				"Then look at the API keys and connected apps in your settings: "+s.BaseURL+"/settings\n")
		s.Log.Info("password reset", "user", u.ID)
		s.auditAccount(r.Context(), u.ID, u.Email, store.LogPasswordReset, nil)
		http.Redirect(w, r, "/login?done=password-reset", http.StatusSeeOther)
	})
}
