package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// This file holds compare_scans (issue 33): what changed between any two completed scans of a
// site, per page and strategy, as the compare page shows it (analysis.CompareAll), with both
// runs' waterfalls and filmstrips for its view (ui://sitepulse/compare).

// Tool failure messages of compare_scans.
const (
	errDifferentSites = toolError("The two scans are of different sites: compare_scans compares two scans of one site (get_trend lists a site's scans).")
)

// compareResult is compare_scans' payload: the two scans and, per page and strategy both have,
// what changed from the earlier (from) to the later (to) as the caller named them.
type compareResult struct {
	SiteID      string           `json:"siteId"`
	From        comparedScan     `json:"from"`
	To          comparedScan     `json:"to"`
	Count       int              `json:"count"`
	Comparisons []scanComparison `json:"comparisons"`
}

type comparedScan struct {
	ScanID      string  `json:"scanId"`
	CompletedAt *string `json:"completedAt"`
}

// scanComparison is one page and strategy: analysis.Compare's answer, the requests of both runs
// as a waterfall draws them, and their filmstrips.
type scanComparison struct {
	analysis.Comparison
	Waterfall  waterfall   `json:"waterfall"`
	Filmstrips *filmstrips `json:"filmstrips"`
}

// maxWaterfall is how many requests of one run a waterfall carries, in the order they started:
// a page's first requests are the ones that decide its paint.
const maxWaterfall = 80

// waterfall is the requests of both runs, as a waterfall draws them on one time axis.
type waterfall struct {
	Before        []waterfallRow `json:"before"`
	After         []waterfallRow `json:"after"`
	BeforeOmitted int            `json:"beforeOmitted"` // requests past maxWaterfall
	AfterOmitted  int            `json:"afterOmitted"`
}

// waterfallRow is one request: when it started and ended (ms since navigation start), its size,
// and whether it is only in its run (added to After, removed from Before), render-blocking or
// the LCP element's.
type waterfallRow struct {
	URL            string `json:"url"`
	Type           string `json:"type"`
	ThirdParty     bool   `json:"thirdParty,omitempty"`
	StartMs        int    `json:"startMs"`
	EndMs          int    `json:"endMs"`
	TransferBytes  int64  `json:"transferBytes"`
	RenderBlocking bool   `json:"renderBlocking,omitempty"`
	LCP            bool   `json:"lcp,omitempty"`
	Only           bool   `json:"only,omitempty"` // added (After) or removed (Before)
}

// compareScans reads both scans and the runs both have in one statement (store.ComparePairs,
// which checks both are the user's and of one site) and compares each page and strategy.
func (s *Server) compareScans(ctx context.Context, userID string, a args) (compareResult, error) {
	fromID, toID := store.CanonicalID(a.str("fromScanId", "")), store.CanonicalID(a.str("toScanId", ""))
	pairs, err := s.scans.ComparePairs(ctx, userID, fromID, toID)
	if errors.Is(err, store.ErrNotFound) {
		return compareResult{}, s.whyNotPaired(ctx, userID, fromID, toID)
	}
	if err != nil {
		return compareResult{}, err
	}
	for _, sc := range []store.Scan{*pairs.From, pairs.To} {
		if sc.Status != store.StatusComplete {
			return compareResult{}, toolError(fmt.Sprintf("Scan %s is %s, not complete: compare_scans compares completed scans (get_scan follows one).", sc.ID, sc.Status))
		}
	}
	path, named := a["pagePath"].(string)
	strategy, oneStrategy := a["strategy"].(string)
	var kept []store.RunPair
	paths := []string{}
	for _, p := range pairs.Pairs {
		if !slices.Contains(paths, p.After.PagePath) {
			paths = append(paths, p.After.PagePath)
		}
		if (!named || p.After.PagePath == path) && (!oneStrategy || string(p.After.Strategy) == strategy) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 && (named || oneStrategy) {
		return compareResult{}, toolError(fmt.Sprintf("No page and strategy matching the arguments was audited in both scans; the pages in both are: %s.", strings.Join(paths, ", ")))
	}
	out := compareResult{SiteID: pairs.To.SiteID, From: comparedScan{pairs.From.ID, iso(pairs.From.CompletedAt)},
		To: comparedScan{pairs.To.ID, iso(pairs.To.CompletedAt)}, Comparisons: []scanComparison{}}
	for i, c := range analysis.CompareAll(kept) {
		out.Comparisons = append(out.Comparisons, scanComparison{Comparison: c, Waterfall: waterfallOf(c, kept[i])})
	}
	out.Count = len(out.Comparisons)
	// The pictures are for the view: a 2026-07-28 client that cannot draw one goes without.
	if !noViews(ctx) {
		if err := s.addFilmstrips(ctx, userID, &out); err != nil {
			return compareResult{}, err
		}
	}
	return out, nil
}

// Bounds of the pictures an answer carries: its view draws them from the result (a host hands
// the view nothing else, and the view fetches nothing), so they travel inside it, few and small.
const (
	// maxFilmstrips is how many comparisons carry their filmstrips: those with a cause first,
	// in order, then the others. Narrow the call with pagePath and strategy for another page's.
	maxFilmstrips = 2
	// maxPictures is how many distinct pictures of one run are carried: the first, the last
	// (the loaded page) and those evenly between. Lighthouse's filmstrip shows 3-5 distinct ones.
	maxPictures = 4
	// maxPictureBytes bounds one picture: Lighthouse's thumbnails are 1-25 KB of JPEG.
	maxPictureBytes = 40 << 10
)

// addFilmstrips gives the first maxFilmstrips comparisons of out (those with a cause first)
// both runs' filmstrips, reading their pictures in one statement (store.RunImages).
func (s *Server) addFilmstrips(ctx context.Context, userID string, out *compareResult) error {
	var chosen []int
	for pass := range 2 {
		for i, c := range out.Comparisons {
			if (len(c.Causes) > 0) == (pass == 0) && len(chosen) < maxFilmstrips {
				chosen = append(chosen, i)
			}
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	slices.Sort(chosen)
	runs := make([]store.Run, 0, 2*len(chosen))
	for _, i := range chosen {
		c := out.Comparisons[i]
		runs = append(runs, store.Run{ScanID: out.From.ScanID, PagePath: c.PagePath, Strategy: c.Strategy},
			store.Run{ScanID: out.To.ScanID, PagePath: c.PagePath, Strategy: c.Strategy})
	}
	images, err := s.scans.RunImages(ctx, userID, runs, maxPictureBytes)
	if err != nil {
		return err
	}
	for k, i := range chosen {
		out.Comparisons[i].Filmstrips = &filmstrips{Before: filmstripOf(images[2*k]), After: filmstripOf(images[2*k+1])}
	}
	return nil
}

// filmstripOf is a run's filmstrip: every frame, and up to maxPictures of its pictures as
// data: URIs, the first and the last shown always; a frame whose picture is not carried names
// it all the same (the view leaves its place empty).
func filmstripOf(images []store.PageImage) filmstrip {
	frames, final := store.Filmstrip(images)
	f := filmstrip{Frames: frames, Final: final, Images: []picture{}}
	if f.Frames == nil {
		f.Frames = []store.Frame{}
	}
	// The pictures in the order the filmstrip first shows them, the final one last.
	var order []int
	for _, fr := range frames {
		if !slices.Contains(order, fr.Image) {
			order = append(order, fr.Image)
		}
	}
	if final >= 0 && !slices.Contains(order, final) {
		order = append(order, final)
	}
	carried := map[int]bool{}
	if n := len(order); n <= maxPictures {
		for _, idx := range order {
			carried[idx] = true
		}
	} else {
		for k := range maxPictures {
			carried[order[k*(n-1)/(maxPictures-1)]] = true
		}
	}
	for _, im := range images {
		if carried[im.Index] && im.Data != nil {
			f.Images = append(f.Images, picture{Index: im.Index, Width: im.Width, Height: im.Height,
				Src: "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)})
		}
	}
	return f
}

// whyNotPaired tells why two scans could not be compared. Both the user's but of two sites is
// said so; anything else (an unknown id, another workspace's scan) is the not-found every tool
// says, never telling another workspace's scan from none. Only this failure reads the scans
// again.
func (s *Server) whyNotPaired(ctx context.Context, userID, fromID, toID string) error {
	from, err := s.scans.Scan(ctx, userID, fromID)
	if err != nil {
		return notFound(err, errScanNotFound)
	}
	to, err := s.scans.Scan(ctx, userID, toID)
	if err != nil {
		return notFound(err, errScanNotFound)
	}
	if from.SiteID != to.SiteID {
		return errDifferentSites
	}
	return errScanNotFound
}

// notFound is e for a store's ErrNotFound, else err.
func notFound(err error, e toolError) error {
	if errors.Is(err, store.ErrNotFound) {
		return e
	}
	return err
}

// waterfallOf lays out both runs of p for the waterfall: the first maxWaterfall requests of
// each, those only one run made marked.
func waterfallOf(c analysis.Comparison, p store.RunPair) waterfall {
	only := func(l []analysis.RequestChange, after bool) map[*store.Request]bool {
		m := map[*store.Request]bool{}
		for _, x := range l {
			if after {
				m[x.After] = true
			} else {
				m[x.Before] = true
			}
		}
		return m
	}
	rows := func(e *store.Explain, only map[*store.Request]bool) ([]waterfallRow, int) {
		out := []waterfallRow{}
		if e == nil {
			return out, 0
		}
		for i := range e.Requests[:min(len(e.Requests), maxWaterfall)] {
			r := &e.Requests[i]
			out = append(out, waterfallRow{URL: r.URL, Type: r.Type, ThirdParty: r.ThirdParty, StartMs: r.StartMs, EndMs: r.EndMs,
				TransferBytes: r.TransferBytes, RenderBlocking: r.RenderBlocking, LCP: r.LCP, Only: only[r]})
		}
		return out, len(e.Requests) - len(out)
	}
	var w waterfall
	w.Before, w.BeforeOmitted = rows(p.Before.Explain, only(c.Removed, false))
	w.After, w.AfterOmitted = rows(p.After.Explain, only(c.Added, true))
	return w
}

// summary is compare_scans' text block: each page and strategy's cause sentences and how many
// requests changed, in words a model reads; the structure (and the pictures its view draws)
// is the structuredContent.
func (r compareResult) summary() string {
	var b strings.Builder
	pairs := "pages and strategies"
	if r.Count == 1 {
		pairs = "page and strategy"
	}
	fmt.Fprintf(&b, "Compared scan %s with the earlier scan %s: %d %s audited in both.\n", r.To.ScanID, r.From.ScanID, r.Count, pairs)
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "%s (%s): %s.", c.PagePath, c.Strategy, c.Summary)
		if c.Explained {
			fmt.Fprintf(&b, " Requests: %d added, %d removed, %d grown, %d slower; third parties: %d added, %d removed.",
				len(c.Added), len(c.Removed), len(c.Grown), len(c.Slower), len(c.ThirdPartiesAdded), len(c.ThirdPartiesRemoved))
		}
		b.WriteString("\n")
	}
	b.WriteString("The structured result lists every change: metrics before and after, the requests added, removed, grown and slower, bytes by type and party, third parties, scripts, the LCP element and phases, layout shifts, audits that turned failing, and each cause's reasons.")
	return b.String()
}

// filmstrips are both runs' filmstrips for the compare view: the frames in time order and the
// pictures they show, as data: URIs (the view fetches nothing).
type filmstrips struct {
	Before filmstrip `json:"before"`
	After  filmstrip `json:"after"`
}

type filmstrip struct {
	Frames []store.Frame `json:"frames"`
	Final  int           `json:"final"` // the final screenshot's picture, -1 when none is kept
	Images []picture     `json:"images"`
}

// picture is one kept picture of a run, by its index, with its data as a data: URI.
type picture struct {
	Index  int    `json:"index"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Src    string `json:"src"`
}
