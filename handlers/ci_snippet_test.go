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
		"the Actions step runs sitepulse check with the site, the key from a secret and the job's token for the status": {got.Actions, []string{
			"- name: SitePulse budget check\n  env:\n    SITEPULSE_URL: https://pulse.example\n    SITEPULSE_SITE_ID: " + id + "\n",
			"    SITEPULSE_API_KEY: ${{ secrets.SITEPULSE_API_KEY }}\n    GITHUB_TOKEN: ${{ github.token }}\n  run: sitepulse check\n",
			"statuses: write",
		}},
		"the GitLab job keeps the JUnit report as the pipeline's test report": {got.GitLab, []string{
			"    SITEPULSE_SITE_ID: " + id + "\n",
			"    - sitepulse check -junit sitepulse.xml -markdown sitepulse.md\n",
			"    reports:\n      junit: sitepulse.xml\n",
		}},
		"curl starts a scan, waits for its verdict and fails with the check": {got.Curl, []string{
			"curl -sS -X POST https://pulse.example/api/external/scans \\\n",
			`-H "Authorization: Bearer $SITEPULSE_API_KEY"`,
			`-d '{"siteId":"` + id + `"}' | jq -r .scanId)`,
			`-d '{"siteId":"` + id + `","scanId":"'"$scan"'","waitSeconds":600}' -o budget.json`,
			"jq -e .pass budget.json",
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
