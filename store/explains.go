package store

import (
	"context"
	"slices"
)

// PageImage is one distinct screenshot of a run (issue 33 item 2): a frame of Lighthouse's
// filmstrip (screenshot-thumbnails), its final screenshot, or both when they are the same
// picture. A run's frames often repeat (a blank page, then the loaded one): each picture is kept
// once, with the times the filmstrip shows it.
//
// Screenshots live in a table of their own (page_images, bytea, migration 020), written in the
// statement that stores the result, and are kept only for the latest two completed scans of
// each page and for both sides of every regression (PageResult.RegressedFrom); the pruner
// releases the others, and retention releases them with the page details (Retention).
type PageImage struct {
	// Index numbers the run's pictures from 0 in the order they first appear; the image routes
	// serve a picture by it.
	Index int `json:"index"`
	// MIME is one of ImageMIMEs: what Lighthouse encoded the picture as.
	MIME string `json:"mime"`
	// Width and Height are the picture's pixels (0 when its format's header was not read).
	Width  int `json:"width"`
	Height int `json:"height"`
	// Timings are the times (ms since navigation start) at which the filmstrip shows this
	// picture, ascending; empty for a final screenshot that no frame shows.
	Timings []int `json:"timings"`
	// Final is true when the picture is the run's final screenshot.
	Final bool `json:"final,omitempty"`
	// Bytes is len(Data), also in listings.
	Bytes int `json:"bytes"`
	// Data is the picture; listings (PageImages) leave it out.
	Data []byte `json:"-"`
}

// ImageMIMEs are the picture formats kept: Lighthouse's screenshots are JPEG (WebP or PNG by
// other tools). Anything else is not kept, so an image route never serves another type.
var ImageMIMEs = []string{"image/jpeg", "image/webp", "image/png"}

// Bounds of a run's pictures.
const (
	MaxPageImages    = 16        // distinct pictures of one run (Lighthouse takes 10 frames and a final one)
	MaxPageImageSize = 512 << 10 // bytes of one picture
)

// KeepableImage answers whether a picture may be kept: a known format within the size bound.
func KeepableImage(mime string, size int) bool {
	return slices.Contains(ImageMIMEs, mime) && size > 0 && size <= MaxPageImageSize
}

// Frame is one moment of a filmstrip: the time and the picture (PageImage.Index) shown.
type Frame struct {
	TimingMs int `json:"timingMs"`
	Image    int `json:"image"`
}

// Filmstrip lays a run's pictures out as the frames of its filmstrip in time order, and the
// index of its final screenshot (-1 when it has none).
func Filmstrip(images []PageImage) (frames []Frame, final int) {
	final = -1
	for _, im := range images {
		for _, t := range im.Timings {
			frames = append(frames, Frame{TimingMs: t, Image: im.Index})
		}
		if im.Final && final < 0 {
			final = im.Index
		}
	}
	slices.SortStableFunc(frames, func(a, b Frame) int { return a.TimingMs - b.TimingMs })
	return frames, final
}

// Explains reads what explains runs for their readers (issue 33): screenshots, and both sides
// of a comparison. Like the scan page's reads, each is scoped to the workspaces the user is a
// member of: another workspace's scan is ErrNotFound, as an unknown id is.
type Explains interface {
	// PageImages lists the pictures kept of a run (a page and strategy of a scan of the
	// user's), by Index, without their Data; none when the scan has no result of the page or
	// its pictures were released. ErrNotFound when the scan is not the user's.
	PageImages(ctx context.Context, userID, scanID, pagePath string, strategy Strategy) ([]PageImage, error)
	// PageImage reads one picture with its Data; ErrNotFound when the scan is not the user's
	// or the picture is not kept.
	PageImage(ctx context.Context, userID, scanID, pagePath string, strategy Strategy, index int) (PageImage, error)
	// ReportImage reads one picture of the scan of report r (system: the public report page,
	// whose token is the credential; the caller checked the report is active). It reads only
	// r.ScanID's pictures: a report never reaches another scan's.
	ReportImage(ctx context.Context, r Report, pagePath string, strategy Strategy, index int) (PageImage, error)
	// ComparePairs reads scans fromScanID and toScanID of one site of the user's and the runs
	// of each page and strategy both have (RunPair), on Postgres in one statement: what the
	// compare page and compare_scans show (analysis.CompareAll). ErrNotFound when either scan
	// is not the user's, or they are of different sites.
	ComparePairs(ctx context.Context, userID, fromScanID, toScanID string) (ScanPairs, error)
	// PreviousPairs reads scan scanID of the user's, the site's previous completed scan (the
	// latest completed before scanID completed; for an unfinished scan, the latest completed)
	// and the runs of each page and strategy both have, in one statement: what a scan's
	// regressions are explained by (analysis.RegressedChanges). From is nil, and Pairs empty,
	// when the site has no such scan. ErrNotFound when the scan is not the user's.
	PreviousPairs(ctx context.Context, userID, scanID string) (ScanPairs, error)
	// RunImages reads the pictures of several runs with their Data, in one statement: what
	// compare_scans hands its view, which draws both runs' filmstrips and fetches nothing. For
	// each of runs (in order) its pictures by Index, a picture of more than maxBytes listed
	// without its Data; none for a run whose pictures are not kept or whose scan is not the
	// user's (the caller reached the scans through a scoped read already).
	RunImages(ctx context.Context, userID string, runs []Run, maxBytes int) ([][]PageImage, error)
}

// Run names one page and strategy of a scan.
type Run struct {
	ScanID, PagePath string
	Strategy         Strategy
}

// RunPair is one page and strategy in two scans, each side as analysis.Compare reads it: its
// ScanID, PagePath, PageURL, Strategy, Scores, CoreWebVitals, Runs (whether a regression was
// confirmed) and Explain (nil for a result kept before issue 33) are filled, the rest of the
// result is not read.
type RunPair struct {
	Before, After PageResult
}

// ScanPairs is two scans of a site, the earlier (From) and the later (To), and the runs of the
// pages and strategies both have, by path then strategy.
type ScanPairs struct {
	From  *Scan
	To    Scan
	Pairs []RunPair
}
