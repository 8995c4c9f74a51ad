package handlers

import (
	"fmt"
	"strings"
)

// ciSnippet is the budget check of one site, ready to paste into CI: a plain curl that prints
// the verdict and fails when the check does, and the same as a GitHub Actions step. The API key
// stays a variable: SITEPULSE_API_KEY (a repository secret in GitHub Actions).
type ciSnippet struct {
	Curl, Actions string
}

func newCISnippet(baseURL, siteID string) ciSnippet {
	call := fmt.Sprintf(`curl -sS -X POST %s/api/external/budget-check \
  -H "Authorization: Bearer $SITEPULSE_API_KEY" \
  -H 'Content-Type: application/json' \
  -d '{"siteId":"%s"}' -o budget.json
jq . budget.json
jq -e .pass budget.json > /dev/null`, baseURL, siteID)
	indented := "    " + strings.ReplaceAll(call, "\n", "\n    ") + "\n"
	return ciSnippet{
		Curl: call,
		Actions: "- name: SitePulse budget check\n" +
			"  env:\n" +
			"    SITEPULSE_API_KEY: ${{ secrets.SITEPULSE_API_KEY }}\n" +
			"  run: |\n" + indented,
	}
}
