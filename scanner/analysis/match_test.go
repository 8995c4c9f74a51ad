package analysis

import (
	"slices"
	"testing"
)

// TestMatchSteps: each step of matchSteps pairs what the steps before it cannot, and says so
// (issue 42 item 2). A request is new only when no step matches it.
func TestMatchSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, a []string
		pair []int
		by   []string
	}{
		{"the same URL, several of one path in swapped order, pair by full URL",
			[]string{"https://a.test/api?id=1", "https://a.test/api?id=2"}, []string{"https://a.test/api?id=2", "https://a.test/api?id=1"},
			[]int{1, 0}, []string{MatchedURL, MatchedURL}},
		{"a cache-busting query",
			[]string{"https://a.test/app.js?v=1"}, []string{"https://a.test/app.js?v=2"},
			[]int{0}, []string{MatchedNoQuery}},
		{"one path, queries changed, in swapped order: each pairs with its own",
			[]string{"https://a.test/api?v=1&id=1", "https://a.test/api?v=1&id=2"}, []string{"https://a.test/api?v=2&id=2", "https://a.test/api?v=2&id=1"},
			[]int{1, 0}, []string{MatchedNoQuery, MatchedNoQuery}},
		{"moved to https on another port",
			[]string{"http://cdn.a.test/x.css"}, []string{"https://cdn.a.test:8443/x.css"},
			[]int{0}, []string{MatchedHostPath}},
		{"a hashed bundle renamed by a build",
			[]string{"https://a.test/static/app.3f9a2c1b.js", "https://a.test/static/vendor.0a1b2c3d.js"},
			[]string{"https://a.test/static/vendor.99ee77aa.js", "https://a.test/static/app.77d0e4aa.js"},
			[]int{1, 0}, []string{MatchedName, MatchedName}},
		{"the exact URL wins over a renamed one",
			[]string{"https://a.test/app.3f9a2c1b.js", "https://a.test/app.77d0e4aa.js"}, []string{"https://a.test/app.77d0e4aa.js"},
			[]int{1}, []string{MatchedURL}},
		{"another file is new",
			[]string{"https://a.test/old.png"}, []string{"https://a.test/new.png"},
			[]int{-1}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := matchURLs(tc.b, tc.a)
			if !slices.Equal(m.pair, tc.pair) || !slices.Equal(m.by, tc.by) {
				t.Errorf("pairs %v by %q, want %v by %q", m.pair, m.by, tc.pair, tc.by)
			}
		})
	}
}

// TestNormalisedName: what a build changes in a name is taken out (Lighthouse CI's
// replaceNondeterministicStrings, and versions); what names another file is kept.
func TestNormalisedName(t *testing.T) {
	for _, tc := range []struct{ x, y string }{
		{"https://a.test/static/js/app.3f9a2c1b.js", "https://a.test/static/js/app.77d0e4aa.js"},
		{"https://a.test/assets/index-BxK3a9_f.js", "https://a.test/assets/index-D4q1Lm2z.js"},
		{"https://a.test/main.0123456789abcdef0123.chunk.css", "https://a.test/main.fedcba9876543210fedc.chunk.css"},
		{"https://cdn.a.test/lib/jquery-3.6.0.min.js", "https://cdn.a.test/lib/jquery-3.7.1.min.js"},
		{"https://cdn.a.test/npm/lib@4.17.21/dist/x.js", "https://cdn.a.test/npm/lib@4.18.0/dist/x.js"},
		{"https://a.test/u/123e4567-e89b-12d3-a456-426614174000/avatar.png", "https://a.test/u/00000000-0000-4000-8000-000000000000/avatar.png"},
		{"http://localhost:8080/app.js?x=1", "http://localhost:9090/app.js"},
	} {
		if NormalisedName(tc.x) != NormalisedName(tc.y) {
			t.Errorf("%s → %s, %s → %s: want the same", tc.x, NormalisedName(tc.x), tc.y, NormalisedName(tc.y))
		}
	}
	for _, tc := range []struct{ x, y string }{
		{"https://a.test/app.3f9a2c1b.js", "https://a.test/vendor.3f9a2c1b.js"},
		{"https://a.test/img/hero.jpg", "https://a.test/img/hero.png"},
		{"https://a.test/fonts/facade.woff2", "https://a.test/fonts/decade.woff2"},
		{"https://a.test/polyfills.js", "https://a.test/polyfill.js"},
		{"https://a.test/app.js", "https://b.test/app.js"},
	} {
		if NormalisedName(tc.x) == NormalisedName(tc.y) {
			t.Errorf("%s and %s: both %s, want different", tc.x, tc.y, NormalisedName(tc.x))
		}
	}
}
