package handlers

import "fmt"

// ciSnippet is the budget check of one site, ready to paste into CI, each starting a scan of
// the deploy, waiting for it and failing the build when it breaks the budgets: a GitHub Actions
// step and a GitLab CI job running `sitepulse check` (this service's own binary), and the same
// with nothing but curl and jq. The API key stays a variable, SITEPULSE_API_KEY (a repository
// secret in GitHub Actions, a masked CI/CD variable in GitLab); it must be allowed to start scans.
type ciSnippet struct {
	Actions, GitLab, Curl string
}

func newCISnippet(baseURL, siteID string) ciSnippet {
	actions := fmt.Sprintf(`# The job needs "permissions: statuses: write" for the commit status.
- name: SitePulse budget check
  env:
    SITEPULSE_URL: %s
    SITEPULSE_SITE_ID: %s
    SITEPULSE_API_KEY: ${{ secrets.SITEPULSE_API_KEY }}
    GITHUB_TOKEN: ${{ github.token }}
  run: sitepulse check
`, baseURL, siteID)
	gitlab := fmt.Sprintf(`sitepulse:
  stage: .post
  variables:
    SITEPULSE_URL: %s
    SITEPULSE_SITE_ID: %s
  script:
    - sitepulse check -junit sitepulse.xml -markdown sitepulse.md
  artifacts:
    when: always
    paths: [sitepulse.md]
    reports:
      junit: sitepulse.xml
`, baseURL, siteID)
	curl := fmt.Sprintf(`scan=$(curl -sS -X POST %[1]s/api/external/scans \
  -H "Authorization: Bearer $SITEPULSE_API_KEY" \
  -H 'Content-Type: application/json' \
  -d '{"siteId":"%[2]s"}' | jq -r .scanId)
curl -sS -X POST %[1]s/api/external/budget-check \
  -H "Authorization: Bearer $SITEPULSE_API_KEY" \
  -H 'Content-Type: application/json' \
  -d '{"siteId":"%[2]s","scanId":"'"$scan"'","waitSeconds":600}' -o budget.json
jq . budget.json
jq -e .pass budget.json > /dev/null`, baseURL, siteID)
	return ciSnippet{Actions: actions, GitLab: gitlab, Curl: curl}
}
