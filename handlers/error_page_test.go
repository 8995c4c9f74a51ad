package handlers

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store"
)

// TestErrorsSayWhatHappened: an error page is headed in plain words, not an HTTP reason phrase
// ("Unprocessable Entity"), and says a sentence; an API error does not repeat its status
// ("403 Forbidden: forbidden: ...", as the check client printed it).
func TestErrorsSayWhatHappened(t *testing.T) {
	p, err := parsePages()
	must(t, err)
	s := &server{Deps: Deps{Log: slog.New(slog.DiscardHandler)}, pages: p}
	h1 := regexp.MustCompile(`<h1>([^<]*)</h1>\s*<p>([^<]*)</p>`)
	for _, kind := range []error{store.ErrNotFound, store.ErrInvalid, store.ErrConflict, store.ErrForbidden, store.ErrGone,
		&store.DuplicateError{Domain: "example.com", SiteID: "s1"}} {
		t.Run("the page of "+kind.Error(), func(t *testing.T) {
			w := httptest.NewRecorder()
			s.error(w, httptest.NewRequest("GET", "/sites/s1", nil), kind, "")
			m := h1.FindStringSubmatch(w.Body.String())
			if m == nil {
				t.Fatalf("no heading and message on the page:\n%s", w.Body)
			}
			if m[1] == http.StatusText(w.Code) {
				t.Errorf("the page of a %d is headed %q, the HTTP reason phrase", w.Code, m[1])
			}
			if m[2] == "" || m[2][:1] != strings.ToUpper(m[2][:1]) || !strings.HasSuffix(m[2], ".") {
				t.Errorf("the message %q is not a sentence", m[2])
			}
		})
		t.Run("the API answer of "+kind.Error(), func(t *testing.T) {
			w := httptest.NewRecorder()
			s.error(w, httptest.NewRequest("GET", "/api/sites/s1", nil), kind, "")
			status := strings.ToLower(http.StatusText(w.Code))
			if body := strings.ToLower(w.Body.String()); strings.Contains(body, `"error":"`+strings.Fields(status)[0]+":") {
				t.Errorf("the answer of a %d repeats its status: %s", w.Code, w.Body)
			}
		})
	}
	w := httptest.NewRecorder()
	s.renderError(w, httptest.NewRequest("GET", "/sites/s1/compare", nil), http.StatusUnprocessableEntity, "Pick two different scans to compare.")
	if strings.Contains(w.Body.String(), "Unprocessable Entity") {
		t.Error(`an error page says "Unprocessable Entity"`)
	}
}
