package handlers

import (
	"strings"
	"testing"
)

func TestCISnippet(t *testing.T) {
	const id = "3f2c5a8e-1b7d-4c9a-9e2f-6a1d0c4b8e71"
	got := newCISnippet("https://pulse.example", id)
	for name, tt := range map[string]struct {
		snippet string
		want    []string
	}{
		"curl names the endpoint, the site and the key variable, and fails with the check": {got.Curl, []string{
			"curl -sS -X POST https://pulse.example/api/external/budget-check \\\n",
			`-H "Authorization: Bearer $SITEPULSE_API_KEY"`,
			`-d '{"siteId":"` + id + `"}'`,
			"jq -e .pass budget.json",
		}},
		"the Actions step reads the key from a secret and runs the same lines indented": {got.Actions, []string{
			"- name: SitePulse budget check\n  env:\n    SITEPULSE_API_KEY: ${{ secrets.SITEPULSE_API_KEY }}\n  run: |\n    curl -sS",
			"\n    jq -e .pass budget.json > /dev/null\n",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, w := range tt.want {
				if !strings.Contains(tt.snippet, w) {
					t.Errorf("snippet lacks %q:\n%s", w, tt.snippet)
				}
			}
		})
	}
}
