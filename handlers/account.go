package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"sitepulse/store"
)

// What a signed-in person does to their own account, from the settings page: change its
// password (asks the current one; ends the other sessions), change its e-mail (confirmed at
// the new address, told to the old), sign out everywhere else, delete it (asks the password;
// refused while a workspace others use needs it). Every POST carries the session's CSRF token
// (requireUser) and ends in a redirect to a page (POST-redirect-GET); a refusal re-renders the
// settings page with the form's message. The password is checked under the login throttle.

// wrongPassword is the message of a current password that is not the account's.
const wrongPassword = "That is not your current password."

// checkPassword checks the visitor's current password for an account change, taking the same
// tokens as a login (per address; then per device cookie, or per account and address and per
// account in the store), so the settings forms are no way around the login throttle. It
// answers a failure itself on the settings page, with the message under the form named field.
func (s *server) checkPassword(w http.ResponseWriter, r *http.Request, field, password string, d settingsData) bool {
	v := visitorFrom(r.Context())
	fail := func(status int, msg string) bool {
		if d.Errors == nil {
			d.Errors = map[string]string{}
		}
		d.Errors[field] = msg
		s.settingsPage(w, r, status, d, "")
		return false
	}
	if password == "" || len(password) > store.MaxPassword {
		return fail(http.StatusUnprocessableEntity, "Enter your current password.")
	}
	ip := clientIP(r)
	if ok, wait := s.loginIP.allow(ip); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		return fail(http.StatusTooManyRequests, fmt.Sprintf("Too many attempts. Wait %d seconds and try again.", int(wait.Seconds())+1))
	}
	release, ok, wait, err := s.takeLogin(r, v.User.Email, ip, s.device(r, v.User))
	if err != nil {
		s.loginIP.refund(ip)
		s.error(w, r, err, "")
		return false
	}
	if !ok {
		s.loginIP.refund(ip)
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		return fail(http.StatusTooManyRequests, fmt.Sprintf("Too many attempts. Wait %d seconds and try again.", int(wait.Seconds())+1))
	}
	if ok, _ := store.CheckPassword(v.User.PasswordHash, password, s.PasswordIterations); !ok {
		s.Log.Info("account change: wrong password", "user", v.User.ID, "remote", ip)
		s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogSignInFailed, map[string]string{"reason": "wrong current password", "form": field})
		return fail(http.StatusUnprocessableEntity, wrongPassword)
	}
	s.loginIP.refund(ip)
	release()
	return true
}

// handleChangePassword sets a new password: every other session of the account ends, this
// browser gets a fresh session id and device cookie, and the address is told.
func (s *server) handleChangePassword() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		next := r.PostForm.Get("new_password")
		if problem := store.PasswordProblem(next); problem != "" {
			s.settingsPage(w, r, http.StatusUnprocessableEntity, settingsData{Errors: map[string]string{"new_password": problem}}, "")
			return
		}
		if !s.checkPassword(w, r, "password", r.PostForm.Get("current_password"), settingsData{}) {
			return
		}
		hash, err := store.HashPassword(next, s.PasswordIterations)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		session, err := s.startSession(w, r, v.User.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		now := s.Now()
		if err := s.Accounts.ChangePassword(r.Context(), v.User.ID, hash, session, now); err != nil {
			s.error(w, r, err, "")
			return
		}
		u := v.User
		u.PasswordHash = hash
		s.setDevice(w, u)
		s.sendMail(r, u.Email, "Your SitePulse password was changed",
			"The password of the SitePulse account of this address was changed from its settings page, and its other sessions were ended.\n\n"+
				"If it was not you, choose a new password now: "+s.BaseURL+"/password/forgot\n")
		s.Log.Info("password changed", "user", u.ID)
		s.auditAccount(r.Context(), u.ID, u.Email, store.LogPasswordChanged, nil)
		http.Redirect(w, r, "/settings?done=password-changed#account", http.StatusSeeOther)
	})
}

// handleChangeEmail asks to move the account to another address: the new address gets a link
// that makes the change (or, when it has an account already, a note that nothing changed: the
// answer here is the same), and the old address is told at once, so its owner can stop a
// change they did not make by changing the password (which drops the link).
func (s *server) handleChangeEmail() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		typed := strings.TrimSpace(r.PostForm.Get("email"))
		d := settingsData{EmailForm: typed}
		email, ok := store.ParseEmail(typed)
		switch {
		case !ok:
			d.Errors = map[string]string{"email": emailProblem}
		case email == v.User.Email:
			d.Errors = map[string]string{"email": "That is already your account's address."}
		}
		if d.Errors != nil {
			s.settingsPage(w, r, http.StatusUnprocessableEntity, d, "")
			return
		}
		if !s.checkPassword(w, r, "email_password", r.PostForm.Get("current_password"), d) {
			return
		}
		if s.takeMail(r, "account mail", email, accountMails) {
			switch _, err := s.Accounts.UserByEmail(r.Context(), email); {
			case err == nil:
				s.sendMail(r, email, "A SitePulse account asked for this address",
					"Someone asked to move their SitePulse account to this e-mail address, which already has an account of its own. Nothing was changed.\n")
			case errors.Is(err, store.ErrNotFound):
				token, hash := store.NewSecret("eml_")
				now := s.Now()
				if err := s.Accounts.CreateAccountLink(r.Context(), store.AccountLink{TokenHash: hash, UserID: v.User.ID, Purpose: store.LinkEmail,
					Email: email, CreatedAt: now, ExpiresAt: now.Add(store.EmailLinkTTL)}); err != nil {
					s.error(w, r, err, "")
					return
				}
				s.sendMail(r, email, "Confirm your new SitePulse e-mail address",
					"To make this the e-mail address of your SitePulse account, open this link within 24 hours; it works once:\n\n"+
						s.BaseURL+"/email/confirm/"+token+"\n\nIf you did not ask for this, ignore this message: nothing changes.\n")
			default:
				s.error(w, r, err, "")
				return
			}
		}
		s.sendMail(r, v.User.Email, "Your SitePulse e-mail address is about to change",
			"Someone signed in to the SitePulse account of this address asked to change it to "+email+".\n\n"+
				"The change happens only when the link sent to that address is followed, within 24 hours. "+
				"If it was not you, change your password now: that cancels it. "+s.BaseURL+"/password/forgot\n")
		s.Log.Info("e-mail change asked", "user", v.User.ID)
		http.Redirect(w, r, "/settings?done=email-sent#account", http.StatusSeeOther)
	})
}

// emailConfirmData is the page of an e-mail change link.
type emailConfirmData struct {
	Email string // the new address
	Token string
}

// handleEmailConfirmPage is where an e-mail change link leads: a button that makes the change.
// A GET changes nothing, since mail scanners open links.
func (s *server) handleEmailConfirmPage() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l, token, ok := s.accountLink(w, r, store.LinkEmail); ok {
			s.render(w, r, http.StatusOK, "email_confirm", page{Title: "Confirm your new e-mail address", Data: emailConfirmData{Email: l.Email, Token: token}})
		}
	}))
}

// handleEmailConfirm makes the change of an e-mail change link: the link is the credential
// (it reached the new mailbox, and only the account's password could ask for it), so it needs
// no session. The old address is told that it happened.
func (s *server) handleEmailConfirm() http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.parseForm(w, r) {
			return
		}
		if ok, wait := s.loginIP.allow(clientIP(r)); !ok {
			w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
			s.renderError(w, r, http.StatusTooManyRequests, fmt.Sprintf("Too many attempts. Wait %d seconds and try again.", int(wait.Seconds())+1))
			return
		}
		_, token, ok := s.accountLink(w, r, store.LinkEmail)
		if !ok {
			return
		}
		old, email, err := s.Accounts.ConfirmEmail(r.Context(), store.HashSecret(token), s.Now())
		if errors.Is(err, store.ErrConflict) {
			s.renderError(w, r, http.StatusConflict, "Another SitePulse account uses this address now, so nothing was changed.")
			return
		}
		if err != nil {
			s.error(w, r, err, "This e-mail confirmation link is not valid. Ask for a new one.")
			return
		}
		s.sendMail(r, old.Email, "Your SitePulse e-mail address was changed",
			"The SitePulse account of this address now uses "+email+": messages about it go there, and you log in with it.\n\n"+
				"If it was not you, write to the administrator of this SitePulse.\n")
		s.Log.Info("e-mail changed", "user", old.ID)
		s.auditAccount(r.Context(), old.ID, old.Email, store.LogEmailChanged, map[string]string{"from": old.Email, "to": email})
		if v := visitorFrom(r.Context()); v != nil && v.User.ID == old.ID {
			http.Redirect(w, r, "/settings?done=email-changed#account", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/login?done=email-changed", http.StatusSeeOther)
	}))
}

// handleEndOtherSessions signs the account out of every browser but this one, and disconnects
// the apps connected since the password was last set, naming them once on the page.
func (s *server) handleEndOtherSessions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		n, err := s.Accounts.EndSessions(r.Context(), v.User.ID, v.Session.TokenHash)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		s.Log.Info("other sessions ended", "user", v.User.ID, "sessions", n)
		s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogSignOutEverywhere, map[string]string{"sessions": strconv.Itoa(n)})
		if apps := s.endGrants(r, v.User.ID, v.User.PasswordChangedAt, s.Now()); apps != "" {
			s.redirectNotice(w, r, "/settings#sessions", notice{Text: flashes["sessions-ended"], Detail: strings.TrimSpace(apps)})
			return
		}
		http.Redirect(w, r, "/settings?done=sessions-ended#sessions", http.StatusSeeOther)
	})
}

// handleDeleteAccount deletes the account (store.DeleteAccount) once its password is given:
// refused, with the workspaces that keep it, while one others use needs it. The platform
// connections of the workspaces that go are disconnected first, as deleting a workspace does.
func (s *server) handleDeleteAccount() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		if !s.checkPassword(w, r, "delete", r.PostForm.Get("current_password"), settingsData{}) {
			return
		}
		inUse := func() {
			s.settingsPage(w, r, http.StatusConflict, settingsData{Errors: map[string]string{"delete": "Your account was not deleted: workspaces others use need it (listed below)."}}, "")
		}
		use, err := s.Accounts.AccountUse(r.Context(), v.User.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if len(use.InUse) > 0 {
			inUse()
			return
		}
		for _, ws := range use.Deleted {
			s.disconnectBeforeDeletion(r, v.User.ID, ws.ID)
		}
		// Recorded while the account still has its workspaces (the lines outlive it).
		s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogAccountDeleted, nil)
		deleted, err := s.Accounts.DeleteAccount(r.Context(), v.User.ID)
		if errors.Is(err, store.ErrConflict) { // someone joined in between
			inUse()
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if err := s.Accounts.ClearLoginAttempts(r.Context(), accountKey(v.User.Email)); err != nil {
			s.Log.Warn("clear login attempts", "err", err)
		}
		s.clearSessionCookie(w)
		s.forgetDevice(w)
		s.sendMail(r, v.User.Email, "Your SitePulse account was deleted",
			"The SitePulse account of this address was deleted, with its personal workspace, API keys, connected apps and sessions. "+
				"This address may sign up again.\n")
		s.Log.Info("account deleted", "user", v.User.ID, "workspaces", len(deleted))
		http.Redirect(w, r, "/login?done=account-deleted", http.StatusSeeOther)
	})
}
