package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"sitepulse/store"
)

// retryAfterSeconds is the Retry-After of a 503 while the database is away: a restart takes a
// few seconds, and database/sql reconnects on the next request.
const retryAfterSeconds = 5

// errorTitles head the error page in plain words, by status: what happened, not the HTTP
// reason phrase ("Unprocessable Entity"). The page's sentence says the rest.
var errorTitles = map[int]string{
	http.StatusBadRequest:            "That request could not be read",
	http.StatusUnauthorized:          "Please log in again",
	http.StatusForbidden:             "Not allowed",
	http.StatusNotFound:              "Not found",
	http.StatusMethodNotAllowed:      "Not found",
	http.StatusConflict:              "Nothing was changed",
	http.StatusGone:                  "No longer available",
	http.StatusRequestEntityTooLarge: "Too large",
	http.StatusUnprocessableEntity:   "Please check what you sent",
	http.StatusTooManyRequests:       "Too many attempts",
	http.StatusInternalServerError:   "Something went wrong",
	http.StatusServiceUnavailable:    "Temporarily unavailable",
}

// errorTitle is the error page's heading for a status (errorTitles), "Something went wrong"
// for one it does not list.
func errorTitle(status int) string {
	if t, ok := errorTitles[status]; ok {
		return t
	}
	return "Something went wrong"
}

// sentence makes a message of the error mapping, written for the API ("site not found"), a
// sentence for the error page: a capital first letter and a full stop.
func sentence(message string) string {
	if message == "" {
		return message
	}
	r, n := utf8.DecodeRuneInString(message)
	message = string(unicode.ToUpper(r)) + message[n:]
	if !strings.HasSuffix(message, ".") && !strings.HasSuffix(message, "?") && !strings.HasSuffix(message, "!") {
		message += "."
	}
	return message
}

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
		if message == "" {
			message = "what was sent was not accepted"
		}
	case store.ErrConflict:
		status, message = http.StatusConflict, "the resource changed or already exists"
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			message = dup.Error() + " (/sites/" + dup.SiteID + ")"
		}
	case store.ErrForbidden:
		status, message = http.StatusForbidden, "your role in this workspace does not allow this"
	case store.ErrGone:
		status, message = http.StatusGone, "this link was used, revoked or has expired"
	case store.ErrUnavailable:
		s.Log.Warn("database unavailable", "method", r.Method, "path", logPath(r), "route", r.Pattern, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		w.Header().Set("Cache-Control", "no-store")
		status, message = http.StatusServiceUnavailable, "the database is unavailable; retry shortly"
		if !isAPI(r.URL.Path) {
			s.failurePage(w, status, errorTitle(status),
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
			s.failurePage(w, status, errorTitle(status),
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
