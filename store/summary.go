package store

import (
	"context"
	"math"
	"time"
)

// ScanSummary is what a completed scan keeps forever, after the workspace's retention has
// pruned its page details (issue 25): for each strategy it has results, mobile first, the scores
// over that strategy's pages and each vital's worst page. Trends and budget history read it, not
// page rows. Postgres computes it in SQL at completion (scan_summary, migration 018); the memory
// store with Summarize; the contract suite holds them equal.
type ScanSummary struct {
	Strategies []StrategySummary `json:"strategies"`
}

// StrategySummary is one strategy's part of a ScanSummary.
type StrategySummary struct {
	Strategy Strategy   `json:"strategy"`
	Pages    int        `json:"pages"`
	Scores   ScanScores `json:"scores"`
	// Worst is each vital's worst page by the vital's interface name (lcp, cls, ...); a vital
	// no page has is absent.
	Worst map[string]WorstPage `json:"worst"`
}

// WorstPage is the highest value of a vital among a strategy's pages, and the first such page
// by path.
type WorstPage struct {
	Value    float64 `json:"value"`
	PagePath string  `json:"pagePath"`
}

// Strategy is the summary of strategy st; ok is false when the scan has no result of it.
func (s ScanSummary) Strategy(st Strategy) (StrategySummary, bool) {
	for _, x := range s.Strategies {
		if x.Strategy == st {
			return x, true
		}
	}
	return StrategySummary{}, false
}

// SiteVital is the scan's value of a vital as a budget for both strategies reads it: the worst
// page, on mobile results when the scan has any; nil when no page has it.
func (s ScanSummary) SiteVital(metric string) *float64 {
	st, ok := s.Strategy(StrategyMobile)
	if !ok {
		st, ok = s.Strategy(StrategyDesktop)
	}
	if w, found := st.Worst[metric]; ok && found {
		v := w.Value
		return &v
	}
	return nil
}

// SummaryVitals are the vitals a summary keeps the worst page of, by interface name.
var SummaryVitals = []struct {
	Name string
	Of   func(Vitals) *float64
}{
	{"lcp", func(v Vitals) *float64 { return v.LCP }},
	{"cls", func(v Vitals) *float64 { return v.CLS }},
	{"inp", func(v Vitals) *float64 { return v.INP }},
	{"fcp", func(v Vitals) *float64 { return v.FCP }},
	{"ttfb", func(v Vitals) *float64 { return v.TTFB }},
	{"tbt", func(v Vitals) *float64 { return v.TBT }},
	{"speedIndex", func(v Vitals) *float64 { return v.SpeedIndex }},
	{"tti", func(v Vitals) *float64 { return v.TTI }},
}

// Summarize is the summary of a scan's successful results, in page order (path, then strategy).
func Summarize(results []PageResult) ScanSummary {
	out := ScanSummary{Strategies: []StrategySummary{}}
	for _, st := range []Strategy{StrategyMobile, StrategyDesktop} {
		sum := StrategySummary{Strategy: st, Worst: map[string]WorstPage{}}
		var scores [4][2]int // sum, count of performance, seo, accessibility, best practices
		for _, r := range results {
			if r.Strategy != st {
				continue
			}
			sum.Pages++
			for i, v := range []*int{r.Scores.Performance, r.Scores.SEO, r.Scores.Accessibility, r.Scores.BestPractices} {
				if v != nil {
					scores[i][0] += *v
					scores[i][1]++
				}
			}
			for _, m := range SummaryVitals {
				if v := m.Of(r.CoreWebVitals); v != nil {
					if w, ok := sum.Worst[m.Name]; !ok || *v > w.Value {
						sum.Worst[m.Name] = WorstPage{Value: *v, PagePath: r.PagePath}
					}
				}
			}
		}
		if sum.Pages == 0 {
			continue
		}
		mean := func(sum, n int) *int {
			if n == 0 {
				return nil
			}
			v := int(math.Round(float64(sum) / float64(n)))
			return &v
		}
		sum.Scores = ScanScores{Performance: mean(scores[0][0], scores[0][1]), SEO: mean(scores[1][0], scores[1][1]),
			Accessibility: mean(scores[2][0], scores[2][1]), BestPractices: mean(scores[3][0], scores[3][1])}
		hs, hn := 0, 0
		for _, v := range []*int{sum.Scores.Performance, sum.Scores.SEO, sum.Scores.Accessibility, sum.Scores.BestPractices} {
			if v != nil {
				hs, hn = hs+*v, hn+1
			}
		}
		sum.Scores.Health = mean(hs, hn)
		out.Strategies = append(out.Strategies, sum)
	}
	return out
}

// DefaultRetentionDays is a new workspace's retention: page details are kept 400 days.
const DefaultRetentionDays = 400

// MaxRetentionDays bounds the setting (ten years); 0 keeps page details forever.
const MaxRetentionDays = 3650

// PruneBatch bounds the page rows one pruning statement deletes, so pruning never holds many
// row locks at once nor blocks a scan's writes for long.
const PruneBatch = 1000

// MonthsAhead is how many months past the current one the pruner keeps partitions made for.
const MonthsAhead = 2

// PrunedScanBytes is what a scan whose page details are all gone takes (scan_bytes of no rows).
const PrunedScanBytes = 300

// KindPrune is the job that deletes page details older than their workspace's retention. The
// store enqueues at most one at a time (EnqueuePrune); every process's scheduler asks it to.
const KindPrune = "prune"

// PruneJob is the args of a KindPrune job: it has none.
type PruneJob struct{}

func (PruneJob) Kind() string { return KindPrune }

// Retention is the store's part of retention (issue 25). Its methods serve the system.
type Retention interface {
	// PruneDetails deletes up to limit page rows (results and errors) of scans that finished
	// more than their workspace's RetentionDays before now, never of a queued or running scan
	// nor of one of the latest two completed scans of a site, nor in a workspace whose
	// retention is 0 (forever). A pruned scan keeps its summary and its row, gets
	// DetailsPrunedAt and loses the bytes its rows took. It answers how many rows it deleted.
	PruneDetails(ctx context.Context, now time.Time, limit int) (int, error)
	// PruneMonths drops the page details (rows and pictures) of whole calendar months (UTC, by
	// the scan's CreatedAt) that ended before now and of which no scan is kept: every scan of
	// the month is finished and one PruneDetails would prune (or pruned already). Its scans get
	// DetailsPrunedAt and keep 300 bytes, as PruneDetails leaves them (on Postgres, from the
	// PruneDetails that the prune job runs next, in batches). On Postgres a month is a
	// partition, detached and dropped (its space goes back to the disk), and the partitions of
	// the current month and MonthsAhead ahead are made first (issue 46). A month that straddles
	// a workspace's window is left to PruneDetails. It answers the months dropped that held
	// scans, oldest first, as "2006-01".
	PruneMonths(ctx context.Context, now time.Time) ([]string, error)
	// EnqueuePrune enqueues a KindPrune job runnable at now unless one is queued or running, or
	// one finished less than every before now: however many processes ask, one runs at a time.
	// It answers whether it enqueued one.
	EnqueuePrune(ctx context.Context, now time.Time, every time.Duration) (bool, error)
	WorkspaceRetention
}

// WorkspaceRetention is the retention setting and the space of one workspace.
type WorkspaceRetention interface {
	// SetRetention sets how many days the workspace keeps page details (0: forever); the
	// caller checked the user may manage it.
	SetRetention(ctx context.Context, workspaceID string, days int) error
	// WorkspaceBytes is about how much the workspace's scans take in the store: the bytes
	// recorded per scan at completion, less what pruning removed, summed.
	WorkspaceBytes(ctx context.Context, workspaceID string) (int64, error)
}

// SiteView is what a site's page shows, read together (SiteViews.SiteView): on Postgres in two
// statements, the scans and then what depends on them.
type SiteView struct {
	History   []Scan // the newest scans of any status, newest first, without their summaries
	Completed []Scan // the most recently completed scans first, with their summaries
	// Metrics are PageMetrics of the latest two completed scans, by scan id: the regressions
	// and budget checks of the latest scan need its pages (the trend reads summaries).
	Metrics map[string][]PageResult
	Errors  []PageError // the failed audits of the newest scan
	// Publishes are the latest publishes since the oldest of Completed was completed, oldest
	// first (as Publishes); Publish the one that started Completed[0], nil when none did.
	Publishes []Publish
	Publish   *Publish
	Budgets   map[string]Budget
	Rules     []AlertRule
}

// SiteViews reads a site's page.
type SiteViews interface {
	// SiteAndWorkspace reads one of the user's sites and its workspace with the user's Role, in
	// one read: the membership check of a request on a site, read afresh every time.
	SiteAndWorkspace(ctx context.Context, userID, siteID string) (Site, Workspace, error)
	// SiteView reads a site of the user's: its history newest scans, completed most recently
	// completed ones, and the rest of SiteView, at most publishes publishes; ErrNotFound when
	// the site is not the user's.
	SiteView(ctx context.Context, userID, siteID string, history, completed, publishes int) (SiteView, error)
}
