package handlers

import (
	"io/fs"
	"regexp"
	"testing"
)

// TestTemplatesHaveNoInlineStyle: the pages' CSP allows only the stylesheet (style-src 'self'),
// so a style attribute or element in a template is blocked in the browser; it belongs in
// static/style.css.
func TestTemplatesHaveNoInlineStyle(t *testing.T) {
	inline := regexp.MustCompile(`(?i)\sstyle\s*=|<style[\s>]`)
	names, err := fs.Glob(templateFS, "templates/*.html")
	must(t, err)
	for _, name := range names {
		b, err := fs.ReadFile(templateFS, name)
		must(t, err)
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has an inline style (%q), which its own CSP blocks", name, m)
		}
	}
}
