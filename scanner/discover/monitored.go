package discover

import (
	"net/url"

	"sitepulse/store"
)

// MonitoredPages are a site's monitored pages as its field data names them: its saved paths on
// its origin, else the pages of its latest completed scan; each without query or fragment, as
// FieldPoint.Page keeps them. The CrUX refresh queries them; the daily field check judges them.
func MonitoredPages(target store.CruxTarget) []string {
	var raw []string
	if len(target.Site.Pages) > 0 {
		for _, p := range target.Site.Pages {
			raw = append(raw, PageURL(target.Site, p))
		}
	} else {
		raw = target.Pages
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range raw {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			continue
		}
		u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
		if !seen[u.String()] {
			seen[u.String()] = true
			out = append(out, u.String())
		}
	}
	return out
}
