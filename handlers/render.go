package handlers

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds every page template, each parsed together with the layout.
type pages struct {
	byName map[string]*template.Template
}

// page is what every template receives.
type page struct {
	Title   string
	Visitor *visitor
	CSRF    string
	Flash   string
	// Notice is shown once after a form's redirect (notice.go); render takes it.
	Notice *notice
	Data   any
	// Public pages (a client report) are read by people with no account: no site navigation.
	Public bool
	// Workspace is the workspace the page is about, with the visitor's role (onSite,
	// onWorkspace): the buttons a role cannot use are not shown.
	Workspace store.Workspace
}

// CanEdit says whether the visitor may change the page's site: an owner or editor.
func (p page) CanEdit() bool { return p.Workspace.Role.Can(store.ActEdit) }

// ratingClass maps an analysis rating to the stylesheet's colour classes.
var ratingClass = map[string]string{analysis.RatingGood: "good", analysis.RatingNI: "ni", analysis.RatingPoor: "poor"}

var templateFuncs = template.FuncMap{
	// reportExpiries are the scan page's choices for a report link's life (ui_reports.go).
	"reportExpiries": func() []reportExpiry { return reportExpiries },
	// pathEscape puts an id that may hold "/" or ":" (a client_id URL) into one path segment.
	"pathEscape": url.PathEscape,
	// score shows a 0-100 score, or a dash when Lighthouse gave none.
	"score": func(p *int) string {
		if p == nil {
			return "–"
		}
		return strconv.Itoa(*p)
	},
	// scoreClass is the colour class of a score: good (90+), ni (50-89), poor, none.
	"scoreClass": func(p *int) string {
		if p == nil {
			return "none"
		}
		return ratingClass[analysis.ScoreRating(*p)]
	},
	// vital shows a vital in its unit: seconds above one second, ms below, CLS unitless.
	"vital": func(metric string, p *float64) string {
		if p == nil {
			return "–"
		}
		return formatVital(metric, *p)
	},
	// vitalClass is the colour class of a vital's web.dev rating, none when it has no rating.
	"vitalClass": func(metric string, p *float64) string {
		if p == nil {
			return "none"
		}
		if c, ok := ratingClass[analysis.VitalRating(metric, *p)]; ok {
			return c
		}
		return "none"
	},
	// datetime is the one way the UI shows a moment: "24 Nov 2026, 09:03 UTC" in a <time>
	// element that carries it in RFC 3339; a nil time is "never".
	"datetime": func(t any) template.HTML {
		var at time.Time
		switch v := t.(type) {
		case time.Time:
			at = v
		case *time.Time:
			if v == nil {
				return "never"
			}
			at = *v
		default:
			return ""
		}
		return template.HTML(`<time datetime="` + at.UTC().Format(time.RFC3339) + `">` + formatTime(at) + `</time>`)
	},
}

// formatTime is the UI's date format (datetime), also used where a <time> element cannot go.
func formatTime(t time.Time) string { return t.UTC().Format("2 Jan 2006, 15:04 UTC") }

// formatVital writes a vital the way people read them: "2.5 s", "830 ms", CLS "0.39".
func formatVital(metric string, v float64) string { return analysis.FormatValue(metric, v) }

func parsePages() (*pages, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range names {
		base := path.Base(name)
		if base == "layout.html" || strings.HasPrefix(base, "_") {
			continue
		}
		// Every page gets the layout and the partials (_*.html) that more than one page uses.
		t, err := template.New(base).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", name)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", base, err)
		}
		p.byName[strings.TrimSuffix(base, ".html")] = t
	}
	return p, nil
}

// render writes a page. The template runs into a buffer first so a template error is a clean
// 500, never half a page.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := s.pages.byName[name]
	if !ok {
		s.error(w, r, fmt.Errorf("no template %q", name), "")
		return
	}
	if p.Visitor == nil {
		p.Visitor = visitorFrom(r.Context())
	}
	if p.Visitor != nil && p.CSRF == "" {
		p.CSRF = p.Visitor.Session.CSRF
	}
	if p.Workspace.ID == "" {
		p.Workspace = workspaceFrom(r.Context())
	}
	if p.Notice == nil {
		p.Notice = s.takeNotice(w, r)
	}
	if f, ok := p.Data.(accountForm); ok && s.SSOProvider != nil {
		f.SSO = s.SSOName // the login page's "Sign in with" button
		p.Data = f
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.error(w, r, fmt.Errorf("render %s: %w", name, err), "")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderError shows an error page with a status, headed in plain words (errorTitle), and a
// sentence for a person.
func (s *server) renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.render(w, r, status, "error", page{Title: errorTitle(status), Data: sentence(message)})
}

// failurePage writes the error page of a failure of ours, without the visitor (loading it may be
// what failed), or plain text when even the template cannot run.
func (s *server) failurePage(w http.ResponseWriter, status int, title, message, plain string) {
	t := s.pages.byName["error"]
	var buf bytes.Buffer
	if t == nil || t.ExecuteTemplate(&buf, "layout", page{Title: title, Data: message}) != nil {
		http.Error(w, plain, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// handleStatic serves the embedded stylesheet and scripts, cacheable for a day.
func (s *server) handleStatic() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			s.renderError(w, r, http.StatusNotFound, "There is no page at this address.")
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}
