package notify

import (
	"strings"

	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

func TestDigestCompose(t *testing.T) {
	d := &Digest{BaseURL: "https://sitepulse.example.com/"}
	site := store.Site{ID: "s1", Name: "Shop\r\nBcc: evil@example.com", Domain: "shop.example"}
	subject, body := d.compose(site, "scan2", "scan1", []analysis.Regression{
		{Metric: "performance", From: 92, To: 16, Delta: -76, PagePath: "/", Strategy: "mobile"},
		{Metric: "lcp", From: 1200.4, To: 8305, Delta: 7104.6, PagePath: "/", Strategy: "mobile"},
		{Metric: "cls", From: 0.02, To: 0.39, Delta: 0.37, PagePath: "/blog/", Strategy: "desktop"},
	})
	if strings.ContainsAny(subject, "\r\n") || subject != "SitePulse: 3 regressions on Shop Bcc: evil@example.com" {
		t.Errorf("subject = %q", subject)
	}
	for _, want := range []string{"performance", "92", "16", "1200 ms", "8305 ms", "0.020", "0.390", "/blog/", "desktop",
		"https://sitepulse.example.com/sites/s1", "Scan scan2, compared with scan scan1"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}
