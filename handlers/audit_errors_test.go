package handlers

import (
	"reflect"
	"testing"

	"sitepulse/store"
)

func TestExplainAuditError(t *testing.T) {
	for _, tt := range []struct {
		n         int
		raw, want string
	}{
		{10, "PSI request failed: dial tcp: lookup www.googleapis.com on 127.0.0.53:53: no such host (gave up after 3 attempts)",
			"10 audits could not reach PageSpeed Insights (DNS lookup failed): check the network or PAGESPEED_API_URL."},
		{1, "PSI request failed: dial tcp 127.0.0.1:18179: connect: connection refused (gave up after 3 attempts)",
			"1 audit could not reach PageSpeed Insights (connection refused): check the network or PAGESPEED_API_URL."},
		{2, "PSI request failed: read: connection reset by peer", "2 audits could not reach PageSpeed Insights (network error): check the network or PAGESPEED_API_URL."},
		{3, "PSI did not answer within 1m0s (gave up after 3 attempts)", "3 audits got no answer from PageSpeed Insights in time: PSI is slow or overloaded; scan again later."},
		{4, "PSI daily quota exhausted (HTTP 429): Quota exceeded for quota metric 'Queries' per day",
			"4 audits hit the PageSpeed Insights daily quota: scans resume after midnight Pacific time; set PAGESPEED_API_KEY for a larger quota."},
		{5, "PSI refused the request (HTTP 400): API key not valid. Please pass a valid API key.",
			"5 audits were refused by PageSpeed Insights (API key rejected): check PAGESPEED_API_KEY and that the API is enabled for it."},
		{1, "Lighthouse runtime error NO_FCP: The page did not paint any content.",
			"1 audit could not be measured by Lighthouse (the page did not load as expected): open the page in a browser; the error below names Lighthouse's reason."},
		{2, `LIGHTHOUSE_CMD "lighthouse" not found: install Lighthouse`, "2 audits could not start Lighthouse (command not found): install it as docs/local-lighthouse.md says, or set LIGHTHOUSE_CMD."},
		{1, "something new", "1 audit failed: the error is below."},
	} {
		if got := explainAuditError(tt.n, tt.raw); got != tt.want {
			t.Errorf("explainAuditError(%d, %q)\n got  %q\n want %q", tt.n, tt.raw, got, tt.want)
		}
	}
}

func TestGroupAuditErrors(t *testing.T) {
	refused := "PSI request failed: connect: connection refused (gave up after 3 attempts)"
	nofcp := "Lighthouse runtime error NO_FCP: The page did not paint any content."
	errs := []store.PageError{
		{PagePath: "/", Strategy: "mobile", Error: nofcp},
		{PagePath: "/", Strategy: "desktop", Error: refused},
		{PagePath: "/a", Strategy: "mobile", Error: refused},
	}
	got := groupAuditErrors(errs)
	if len(got) != 2 || got[0].Raw != refused || got[1].Raw != nofcp {
		t.Fatalf("groups %+v, want the two refused first, then NO_FCP", got)
	}
	if want := []store.PageError{errs[1], errs[2]}; !reflect.DeepEqual(got[0].Pages, want) {
		t.Errorf("pages %+v, want %+v", got[0].Pages, want)
	}
	if got[0].Sentence != "2 audits could not reach PageSpeed Insights (connection refused): check the network or PAGESPEED_API_URL." {
		t.Errorf("sentence %q", got[0].Sentence)
	}
	if groupAuditErrors(nil) != nil {
		t.Error("no errors, want no groups")
	}
}

// A scan whose page discovery stopped at a limit says so among its errors, as a note of the
// scan rather than "1 audit failed".
func TestGroupAuditErrorsTellsTheDiscoveryNote(t *testing.T) {
	note := "page discovery stopped at its deadline of 30s; the pages found before it were audited"
	got := groupAuditErrors([]store.PageError{{PagePath: "/sitemap.xml", Strategy: "discovery", Error: note}})
	if want := "The scan audited fewer pages than its sitemap lists: " + note + "."; len(got) != 1 || got[0].Sentence != want {
		t.Errorf("groups %+v, want one with the sentence %q", got, want)
	}
}
