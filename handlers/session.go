package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sitepulse/store"
)

// AuthStore is what finds the visitor and what they may do, for every surface: the session
// behind a cookie, the API key behind a bearer, the workspace and site a route names.
type AuthStore interface {
	SessionByHash(ctx context.Context, tokenHash string, now time.Time) (store.Session, error)
	TouchSession(ctx context.Context, tokenHash string, now time.Time) error
	CreateSession(ctx context.Context, s store.Session) error
	DeleteSession(ctx context.Context, tokenHash string) error
	APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (store.APIKey, error)
	Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error)
	Site(ctx context.Context, userID, siteID string) (store.Site, error)
	// SiteAndWorkspace is a site route's door (onSite): the site and the role in one read.
	SiteAndWorkspace(ctx context.Context, userID, siteID string) (store.Site, store.Workspace, error)
}

// sessionTTL is the absolute lifetime of a session. Within it, a session also
// ends after Deps.SessionIdle without a request (SESSION_IDLE_MINUTES).
const sessionTTL = 30 * 24 * time.Hour

// visitor is the signed-in user of a request and their session.
type visitor struct {
	User    store.User
	Session store.Session
}

type visitorKey struct{}

// visitorFrom returns the request's signed-in visitor, or nil.
func visitorFrom(ctx context.Context) *visitor {
	v, _ := ctx.Value(visitorKey{}).(*visitor)
	return v
}

// loadVisitor reads the session cookie; nil when there is none or it is unknown, expired or
// idle for longer than SessionIdle (then it is deleted). A request records the session's use,
// at most once per store.SessionTouchGranularity.
func (s *server) loadVisitor(r *http.Request) (*visitor, error) {
	c, err := r.Cookie(s.cookieName)
	if err != nil || c.Value == "" || len(c.Value) > 200 {
		return nil, nil
	}
	now := s.Now()
	sess, err := s.Auth.SessionByHash(r.Context(), store.HashSecret(c.Value), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch idle := now.Sub(sess.SeenAt); {
	case idle > s.SessionIdle:
		return nil, s.Auth.DeleteSession(r.Context(), sess.TokenHash)
	case idle >= store.SessionTouchGranularity:
		if err := s.Auth.TouchSession(r.Context(), sess.TokenHash, now); err != nil {
			return nil, err
		}
	}
	if sess.SSOIssuer != "" && now.Sub(sess.SSOCheckedAt) >= s.SSORecheck {
		// A single sign-on session lives while its provider vouches: asked again every
		// SSORecheck, it ends when the provider refuses (recheck.go).
		// A provider that cannot be asked ends nothing: this request is signed out, the next
		// asks again.
		if ok, lost := s.revouchOrLose(r, sess.SSOIssuer, sess.SSOSubject); !ok {
			if lost {
				s.Auth.DeleteSession(r.Context(), sess.TokenHash)
			}
			return nil, nil
		}
	}
	return &visitor{User: sess.User, Session: sess}, nil
}

// withVisitor puts the visitor, if any, in the request context for pages that work both ways.
func (s *server) withVisitor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.loadVisitor(r)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if v != nil {
			ctx := context.WithValue(r.Context(), visitorKey{}, v)
			r = r.WithContext(store.WithUserID(ctx, v.User.ID))
		}
		next.ServeHTTP(w, r)
	})
}

// requireUser lets signed-in users through. A signed-out GET is sent to the login page and
// brought back afterwards; anything else gets 401. Every POST must carry the session's CSRF
// token in the form field csrf_token.
func (s *server) requireUser(next http.Handler) http.Handler {
	return s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitorFrom(r.Context())
		if v == nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.renderError(w, r, http.StatusUnauthorized, "Your session has ended. Log in and try again.")
			return
		}
		if r.Method == http.MethodPost && !s.validCSRF(w, r, v) {
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// validCSRF checks the form's csrf_token against the session's in constant time and answers
// the failure itself.
func (s *server) validCSRF(w http.ResponseWriter, r *http.Request, v *visitor) bool {
	if !s.parseForm(w, r) {
		return false
	}
	got := r.PostForm.Get("csrf_token")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(v.Session.CSRF)) != 1 {
		s.renderError(w, r, http.StatusForbidden, "This form has expired. Go back, reload the page and try again.")
		return false
	}
	return true
}

// parseForm parses a form body and answers the failure itself: 413 past the body cap, 400 for
// a body that is not a form.
func (s *server) parseForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.renderError(w, r, http.StatusRequestEntityTooLarge, "That form was too large.")
			return false
		}
		s.renderError(w, r, http.StatusBadRequest, "That form could not be read.")
		return false
	}
	return true
}

// startSession creates a fresh session for a user (a new id at every login) and sets its
// cookie; it answers the session's token hash.
func (s *server) startSession(w http.ResponseWriter, r *http.Request, userID string) (string, error) {
	return s.newSession(w, r, store.Session{UserID: userID})
}

// newSession is startSession for a session that may carry its single sign-on identity.
func (s *server) newSession(w http.ResponseWriter, r *http.Request, sess store.Session) (string, error) {
	token, hash := store.NewSecret("")
	csrf, _ := store.NewSecret("")
	now := s.Now()
	sess.TokenHash, sess.CSRF, sess.CreatedAt, sess.ExpiresAt = hash, csrf, now, now.Add(sessionTTL)
	err := s.Auth.CreateSession(r.Context(), sess)
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName, Value: token, Path: "/", MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
	return hash, nil
}

// endSession deletes the session server-side and clears the cookie.
func (s *server) endSession(w http.ResponseWriter, r *http.Request, v *visitor) error {
	s.clearSessionCookie(w)
	return s.Auth.DeleteSession(r.Context(), v.Session.TokenHash)
}

// clearSessionCookie tells the browser to drop its session cookie.
func (s *server) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: s.cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
}

// safeNext returns a local path to go to after login, or "/" for anything that could leave
// the site ("//evil", "/\evil", "https://evil").
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}
