package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"sitepulse/store"
)

// retryAfterSeconds is the Retry-After of a 503 while the database is away: a restart takes a
// few seconds, and database/sql reconnects on the next request.
const retryAfterSeconds = 5

// error answers a request whose store call failed: the status from what the store says went
// wrong (store.Classify), the shape from the route (the REST {error} on /api/ and the other
// JSON routes, the error page elsewhere).
//
//	store.ErrNotFound    404 with notFound as the message ("" says "not found")
//	store.ErrInvalid     422 with the rules' messages (what a site may be, store.Site.Validate)
//	store.ErrConflict    409; a store.DuplicateError names the workspace's site on that domain
//	store.ErrForbidden   403: a member whose role does not allow it (a non-member gets 404)
//	store.ErrGone        410: an invitation used, revoked or expired
//	store.ErrUnavailable 503 with Retry-After, a warning: nothing is wrong with the request or with us
//	client went away     499 (nginx's "client closed request"), nobody reads it
//	anything else        500 without details, logged as an error
func (s *server) error(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	status, message := http.StatusInternalServerError, "internal error"
	switch store.Classify(err) {
	case store.ErrNotFound:
		status, message = http.StatusNotFound, notFound
		if message == "" {
			message = "not found"
		}
	case store.ErrInvalid:
		status, message = http.StatusUnprocessableEntity, store.InvalidMessage(err)
	case store.ErrConflict:
		status, message = http.StatusConflict, "conflict: the resource changed or already exists"
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			message = "conflict: " + dup.Error() + " (/sites/" + dup.SiteID + ")"
		}
	case store.ErrForbidden:
		status, message = http.StatusForbidden, "forbidden: your role in this workspace does not allow this"
	case store.ErrGone:
		status, message = http.StatusGone, "gone: this link was used, revoked or has expired"
	case store.ErrUnavailable:
		s.Log.Warn("database unavailable", "method", r.Method, "path", logPath(r), "route", r.Pattern, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		w.Header().Set("Cache-Control", "no-store")
		status, message = http.StatusServiceUnavailable, "the database is unavailable; retry shortly"
		if !isAPI(r.URL.Path) {
			s.failurePage(w, status, "Service unavailable",
				"SitePulse cannot reach its database just now. Please try again in a few seconds.", "Service unavailable: "+message)
			return
		}
	default:
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			s.Log.Info("client went away", "method", r.Method, "path", logPath(r))
			w.WriteHeader(499)
			return
		}
		s.Log.Error("request failed", "method", r.Method, "path", logPath(r), "route", r.Pattern, "err", err)
		if !isAPI(r.URL.Path) {
			s.failurePage(w, status, "Internal error",
				"Something went wrong on our side. It has been logged; please try again.", "Internal error")
			return
		}
	}
	if isAPI(r.URL.Path) {
		writeError(w, status, message)
		return
	}
	s.renderError(w, r, status, message)
}
