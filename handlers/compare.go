package handlers

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// "What changed" between two runs of a page (issue 33 item 4): the scan page shows a panel per
// regressed page against the site's previous completed scan, and GET /sites/{siteId}/compare
// ?from=&to=&page=&strategy= the same panel for any two completed scans of a site. Both build
// it with changePanel from analysis.Compare, and draw it with the one partial
// _what_changed.html.

// changePanel is the "What changed" panel of one page and strategy in two scans.
type changePanel struct {
	ID       string // the panel's anchor
	Site     store.Site
	From, To store.Scan
	analysis.Comparison
	// Regressions are the page's regressions by the alerts' rule (the scan page's panels).
	Regressions []analysis.Regression
	// Moments label the filmstrips' shared time axis; Film is each run's row.
	Moments []string
	Film    [2]filmRow
	// Waterfall draws both runs' requests; Requests is how many there are in all, Hidden how
	// many it leaves out.
	Waterfall        template.HTML
	Requests, Hidden int
	Phases           template.HTML
	// CompareURL is the compare page of the panel's page.
	CompareURL string
}

// filmRow is one run's filmstrip on the panel's time axis.
type filmRow struct {
	Label string // "Before", "After"
	When  string // the scan's completion
	LCP   string // when its LCP happened, "" when unknown
	Cells []filmFrame
}

// filmFrame is what a run showed at one moment: a picture (Src "" before its first frame).
type filmFrame struct {
	Src string
	LCP bool
}

// Worse are the page's metrics that got worse beyond noise, in words: "LCP 752 ms → 8.3 s".
func (p changePanel) Worse() []string {
	var out []string
	for _, m := range p.Metrics {
		if m.Regressed && m.Before != nil && m.After != nil {
			out = append(out, analysis.Label(m.Metric)+" "+analysis.FormatValue(m.Metric, *m.Before)+" → "+analysis.FormatValue(m.Metric, *m.After))
		}
	}
	return out
}

// lcpMs is when a run's LCP happened: the sum of its phases when Lighthouse broke it down (the
// moment the filmstrip and the waterfall observed), else its LCP metric; 0 when neither.
func lcpMs(r store.PageResult) int {
	if r.Explain != nil && r.Explain.LCP.Phased {
		return r.Explain.LCP.Ms()
	}
	if v := r.CoreWebVitals.LCP; v != nil {
		return int(*v)
	}
	return 0
}

// imageSrc is the address of a picture of a scan's run.
func imageSrc(siteID, scanID, path string, strategy store.Strategy, index int) string {
	return "/sites/" + siteID + "/scans/" + scanID + "/images/" + strconv.Itoa(index) + "?" +
		url.Values{"path": {path}, "strategy": {string(strategy)}}.Encode()
}

// compareURL is the compare page of a page and strategy in two scans.
func compareURL(siteID, from, to, path string, strategy store.Strategy) string {
	q := url.Values{"from": {from}, "to": {to}}
	if path != "" {
		q.Set("page", path)
		q.Set("strategy", string(strategy))
	}
	return "/sites/" + siteID + "/compare?" + q.Encode()
}

// changePanel draws what changed in a page and strategy (pair, compared as c) between scans
// from and to of site: the filmstrips read from the scans' kept pictures.
func (s *server) changePanel(ctx context.Context, uid string, site store.Site, from, to store.Scan, pair store.RunPair, c analysis.Comparison) (changePanel, error) {
	p := changePanel{ID: "changed", Site: site, From: from, To: to, Comparison: c,
		CompareURL: compareURL(site.ID, from.ID, to.ID, c.PagePath, c.Strategy)}
	lcp := [2]int{lcpMs(pair.Before), lcpMs(pair.After)}
	var images [2][]store.PageImage
	for i, scanID := range []string{from.ID, to.ID} {
		var err error
		if images[i], err = s.Scans.PageImages(ctx, uid, scanID, c.PagePath, c.Strategy); err != nil {
			return p, err
		}
	}
	moments, cells := svg.FilmGrid(images[0], images[1], lcp[0], lcp[1])
	for _, m := range moments {
		p.Moments = append(p.Moments, svg.AxisLabel(m))
	}
	for i, sc := range []store.Scan{from, to} {
		row := filmRow{Label: []string{"Before", "After"}[i]}
		if sc.CompletedAt != nil {
			row.When = formatTime(*sc.CompletedAt)
		}
		if lcp[i] > 0 {
			row.LCP = analysis.FormatValue("lcp", float64(lcp[i]))
		}
		for _, cell := range cells[i] {
			f := filmFrame{LCP: cell.LCP}
			if cell.Image >= 0 {
				f.Src = imageSrc(site.ID, sc.ID, c.PagePath, c.Strategy, cell.Image)
			}
			row.Cells = append(row.Cells, f)
		}
		p.Film[i] = row
	}
	reqs := analysis.Requests(pair.Before.Explain, pair.After.Explain)
	p.Requests = len(reqs)
	if len(reqs) > 0 {
		p.Waterfall, p.Hidden = svg.Waterfall(reqs, lcp[0], lcp[1])
	}
	p.Phases = svg.Phases(c.LCP.Phases)
	return p, nil
}

// maxChangePanels bounds the scan page's panels (each reads its runs' pictures); the compare
// page shows any other page.
const maxChangePanels = 10

// regressedCount is how much of a scan regressed: pages, and runs (a page on one strategy).
type regressedCount struct{ Pages, Runs int }

// regressedPanels are the scan page's panels: what changed in each regressed page of a
// completed scan since the site's previous completed scan, at most maxChangePanels; and how
// many pages and runs regressed in all.
func (s *server) regressedPanels(ctx context.Context, uid string, site store.Site, scan store.Scan) ([]changePanel, *store.Scan, regressedCount, error) {
	var n regressedCount
	pairs, err := s.Scans.PreviousPairs(ctx, uid, scan.ID)
	if err != nil || pairs.From == nil {
		return nil, nil, n, err
	}
	var out []changePanel
	changes := analysis.RegressedChanges(pairs.Pairs)
	pages := map[string]bool{}
	for _, ch := range changes {
		pages[ch.PagePath] = true
	}
	n = regressedCount{Pages: len(pages), Runs: len(changes)}
	for _, ch := range changes[:min(len(changes), maxChangePanels)] {
		for _, pair := range pairs.Pairs {
			if pair.After.PagePath != ch.PagePath || pair.After.Strategy != ch.Strategy {
				continue
			}
			p, err := s.changePanel(ctx, uid, site, *pairs.From, pairs.To, pair, ch.Comparison)
			if err != nil {
				return nil, nil, n, err
			}
			p.Regressions = ch.Regressions
			p.ID = "changed-" + strconv.Itoa(len(out))
			out = append(out, p)
			break
		}
	}
	return out, pairs.From, n, nil
}

// comparePageData is the compare page.
type comparePageData struct {
	Site     store.Site
	From, To store.Scan
	// Completed are the site's completed scans the form offers, newest first.
	Completed []store.Scan
	// Pages are the pages and strategies both scans have, to pick from.
	Pages []comparePage
	// Panel is the chosen page's; nil when the scans share no page.
	Panel *changePanel
}

// comparePage is one page and strategy the compare page offers.
type comparePage struct {
	Path      string
	Strategy  store.Strategy
	Regressed bool
	Selected  bool
}

// maxCompareScans is how many completed scans the compare forms offer.
const maxCompareScans = 50

func (s *server) handleCompare() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		q := r.URL.Query()
		if !q.Has("from") && !q.Has("to") {
			s.compareLatest(w, r, site, q)
			return
		}
		from, to := store.CanonicalID(q.Get("from")), store.CanonicalID(q.Get("to"))
		if !store.ValidUUID(from) || !store.ValidUUID(to) {
			s.renderError(w, r, http.StatusBadRequest, "Pick two scans to compare: from and to must be the ids of two completed scans of this site.")
			return
		}
		if from == to {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Pick two different scans to compare.")
			return
		}
		path, strategy := q.Get("page"), store.Strategy(q.Get("strategy"))
		if path != "" || strategy != "" {
			var valid bool
			if path, strategy, valid = pageParams(r, "page"); !valid {
				s.renderError(w, r, http.StatusBadRequest, "page must be a path of the site, like /pricing, and strategy mobile or desktop.")
				return
			}
		}
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		pairs, err := s.Scans.ComparePairs(ctx, uid, from, to)
		if err == nil && (pairs.From == nil || pairs.To.SiteID != site.ID || pairs.From.SiteID != site.ID) {
			err = store.ErrNotFound
		}
		if err != nil {
			s.error(w, r, err, "There is no such scan for this site.")
			return
		}
		if pairs.From.Status != store.StatusComplete || pairs.To.Status != store.StatusComplete {
			s.renderError(w, r, http.StatusUnprocessableEntity, "Only completed scans can be compared; one of these has not completed.")
			return
		}
		if pairs.To.CompletedAt.Before(*pairs.From.CompletedAt) { // the earlier run is always Before
			q.Set("from", to)
			q.Set("to", from)
			http.Redirect(w, r, "/sites/"+site.ID+"/compare?"+q.Encode(), http.StatusSeeOther)
			return
		}
		d := comparePageData{Site: site, From: *pairs.From, To: pairs.To}
		if d.Completed, err = s.Scans.CompletedScans(ctx, uid, site.ID, maxCompareScans); err != nil {
			s.error(w, r, err, "")
			return
		}
		all := analysis.CompareAll(pairs.Pairs)
		pick := -1
		for i, c := range all {
			d.Pages = append(d.Pages, comparePage{Path: c.PagePath, Strategy: c.Strategy, Regressed: len(c.Causes) > 0})
			if path != "" && c.PagePath == path && c.Strategy == strategy {
				pick = i
			}
		}
		switch {
		case path != "" && pick < 0:
			s.renderError(w, r, http.StatusNotFound, "These two scans have no result of that page on "+string(strategy)+" in common.")
			return
		case pick < 0 && len(all) > 0:
			pick = worstComparison(all)
		}
		if pick >= 0 {
			d.Pages[pick].Selected = true
			p, err := s.changePanel(ctx, uid, site, d.From, d.To, pairs.Pairs[pick], all[pick])
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			d.Panel = &p
		}
		s.render(w, r, http.StatusOK, "compare", page{Title: "Compare scans of " + site.Name, Data: d})
	})
}

// compareLatest answers the compare page asked for no scans: the site's latest two completed
// scans, the earlier first (the page and strategy asked for kept), or when it has fewer a page
// that says it needs two.
func (s *server) compareLatest(w http.ResponseWriter, r *http.Request, site store.Site, q url.Values) {
	scans, err := s.Scans.CompletedScans(r.Context(), visitorFrom(r.Context()).User.ID, site.ID, 2)
	if err != nil {
		s.error(w, r, err, "")
		return
	}
	if len(scans) == 2 {
		q.Set("from", scans[1].ID)
		q.Set("to", scans[0].ID)
		http.Redirect(w, r, "/sites/"+site.ID+"/compare?"+q.Encode(), http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "compare", page{Title: "Compare scans of " + site.Name, Data: comparePageData{Site: site, Completed: scans}})
}

// worstComparison is the comparison the compare page opens on: the one whose performance score
// dropped most among those with a metric that got worse, else the first.
func worstComparison(all []analysis.Comparison) int {
	best, drop := 0, -1.0
	for i, c := range all {
		if len(c.Causes) == 0 {
			continue
		}
		d := 0.0
		for _, m := range c.Metrics {
			if m.Metric == "performance" {
				d = -m.Delta
			}
		}
		if d > drop {
			best, drop = i, d
		}
	}
	return best
}
