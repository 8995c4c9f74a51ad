package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"sitepulse/securitylog"
)

// middleware wraps the mux with what every request gets: panic recovery, an access log line,
// security headers, a body cap, cross-origin protection for the cookie-authenticated pages, and
// 404/405 answers in the shape of the surface (JSON under /api, a page elsewhere).
func (s *server) middleware(mux *http.ServeMux) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused.")
	}))
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		r.Pattern = pattern // for the metrics (accessLog): the route, never the path
		if pattern == "" {
			s.unrouted(w, r, h)
			return
		}
		if isAPI(r.URL.Path) {
			// JSON APIs are called cross-origin by design (MCP clients, CI) with bearer
			// credentials, never cookies.
			mux.ServeHTTP(w, r)
			return
		}
		cop.Handler(mux).ServeHTTP(w, r)
	})
	return s.recoverer(withOrigin(s.accessLog(s.headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			limit := int64(maxBody)
			if isRunnerResult(r.URL.Path) { // a Lighthouse report, read only once its runner's token is verified
				limit = maxRunnerReport
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		routed.ServeHTTP(w, r)
	})))))
}

// withOrigin puts where the request comes from in its context, for the security log's lines it
// causes. It wraps the access log, which reads the route the mux sets on this very request.
func withOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(securitylog.WithOrigin(r.Context(), securitylog.Origin{IP: clientIP(r), UserAgent: r.UserAgent()})))
	})
}

// unrouted answers a request no route matched, in the surface's shape, keeping the mux's status
// (404, or 405 with its Allow header).
func (s *server) unrouted(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &statusRecorder{header: w.Header()}
	h.ServeHTTP(rec, r)
	status := rec.status
	if status != http.StatusMethodNotAllowed {
		status = http.StatusNotFound
	}
	w.Header().Del("Content-Type")
	w.Header().Del("X-Content-Type-Options")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	msg := "not found"
	if status == http.StatusMethodNotAllowed {
		msg = "method not allowed"
	}
	if isAPI(r.URL.Path) {
		writeError(w, status, msg)
		return
	}
	// The page shows the navigation of whoever asked: a signed-in user keeps theirs.
	s.withVisitor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, status, map[int]string{404: "There is no page at this address.", 405: "This page does not accept that method."}[status])
	})).ServeHTTP(w, r)
}

// statusRecorder keeps the status a handler chose and drops its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// headers sets the security headers of every response.
func (s *server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Assigned, not Set: the keys are canonical already and the values shared, so a request
		// allocates none of them (Set makes a slice per header).
		h := w.Header()
		h["X-Content-Type-Options"] = nosniffValue
		h["X-Frame-Options"] = denyValue
		h["Referrer-Policy"] = referrerValue
		if !isAPI(r.URL.Path) {
			h["Content-Security-Policy"] = cspValue
		}
		if s.secure {
			h["Strict-Transport-Security"] = hstsValue
		}
		next.ServeHTTP(w, r)
	})
}

// The security headers' values, shared by every response (headers). Each is a slice of one
// value and capacity one, so a handler that adds to one (Header.Add) appends to a copy.
var (
	nosniffValue  = []string{"nosniff"}
	denyValue     = []string{"DENY"}
	referrerValue = []string{"strict-origin-when-cross-origin"}
	// No form-action: the consent page's 303 to a client's redirect URI must not be blocked.
	cspValue  = []string{"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"}
	hstsValue = []string{"max-age=31536000"}
)

// loggingWriter remembers the status and size of a response for the access log. It passes
// Flush through so server-sent events stream.
type loggingWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *loggingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *loggingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *loggingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *loggingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// secretPaths is the one redaction list: the prefixes of the routes whose path carries a secret
// (a report link, an invitation link, the account links: sign-up, password reset, e-mail
// change). Such a path is logged as its prefix only, at every level.
// TestSecretPathsRedactedFromLogs walks every route of routes.go with a {token} and fails while
// one is missing here.
var secretPaths = []string{"/report/", "/invite/", "/signup/confirm/", "/password/reset/", "/email/confirm/"}

// logPath is the request's path as logs may show it, at every level: without the query (codes,
// states) and with a secret in the path (a report token) redacted. The path is judged as the
// router sees it after cleaning, so //report/<token> or /x/../report/<token>, which the router
// redirects to the report, are redacted too.
func logPath(r *http.Request) string {
	cleaned := path.Clean("/" + r.URL.Path)
	for _, prefix := range secretPaths {
		if strings.HasPrefix(cleaned, prefix) && len(cleaned) > len(prefix) {
			return prefix + "[redacted]"
		}
	}
	return r.URL.Path
}

// accessLog logs one line per request: method, path (logPath), status, size and duration; and
// counts it in the metrics by the route pattern that matched.
func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		lw := &loggingWriter{ResponseWriter: w}
		s.Metrics.Begin()
		defer s.Metrics.End()
		next.ServeHTTP(lw, r)
		if lw.status == 0 {
			lw.status = http.StatusOK
		}
		s.Metrics.Observe(r.Pattern, lw.status, time.Since(start))
		level := slog.LevelDebug
		if lw.status >= 500 {
			level = slog.LevelWarn
		}
		if s.Log.Enabled(r.Context(), level) { // else skip building a line nobody reads
			s.Log.Log(r.Context(), level, "http", "method", r.Method, "path", logPath(r), "status", lw.status,
				"bytes", lw.bytes, "ms", time.Since(start).Milliseconds(), "remote", clientIP(r))
		}
	})
}

// recoverer turns a panic into a logged 500 so one bad request cannot take the process down.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Log.Error("panic serving request", "method", r.Method, "path", logPath(r),
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if isAPI(r.URL.Path) {
					writeError(w, http.StatusInternalServerError, "internal error")
					return
				}
				http.Error(w, "Internal error", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
