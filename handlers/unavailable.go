package handlers

import (
	"net/http"
	"strconv"
)

// retryAfterSeconds is the Retry-After of a 503 while the database is away: a restart takes a
// few seconds, and database/sql reconnects on the next request.
const retryAfterSeconds = 5

// unavailable answers 503 with Retry-After when the database cannot be reached: the REST shape
// {error} on JSON routes, the error page elsewhere. It is logged as a warning, without the
// stack of an internal error, since nothing is wrong with the request or with us.
func (s *server) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.Log.Warn(what+": database unavailable", "method", r.Method, "path", logPath(r), "err", err)
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	w.Header().Set("Cache-Control", "no-store")
	const msg = "the database is unavailable; retry shortly"
	if isAPI(r.URL.Path) {
		writeError(w, http.StatusServiceUnavailable, msg)
		return
	}
	s.failurePage(w, http.StatusServiceUnavailable, "Service unavailable",
		"SitePulse cannot reach its database just now. Please try again in a few seconds.", "Service unavailable: "+msg)
}
