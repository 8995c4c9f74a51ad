package memory

import (
	"context"
	"slices"

	"sitepulse/store"
)

// keptImages are the pictures of r that Postgres's savePageResultSQL keeps: from index 0 on,
// in order, each of a kept format and size, at most store.MaxPageImages; copied.
func keptImages(images []store.PageImage) []store.PageImage {
	var out []store.PageImage
	for i, im := range images {
		if i != im.Index || !store.KeepableImage(im.MIME, len(im.Data)) || i == store.MaxPageImages {
			break
		}
		im.Timings, im.Data, im.Bytes = slices.Clone(im.Timings), slices.Clone(im.Data), len(im.Data)
		if im.Timings == nil {
			im.Timings = []int{}
		}
		out = append(out, im)
	}
	return out
}

// imageBytes is page_image_bytes: 100 B, the picture and its page's path.
func imageBytes(im store.PageImage, path string) int64 { return int64(100 + len(im.Data) + len(path)) }

// pinImages marks the pictures of a page of scan scanID kept (both sides of a regression); the
// caller holds m.mu.
func (m *Store) pinImages(scanID string, k store.PageKey) {
	if r, ok := m.results[scanID][k]; ok && len(r.images) > 0 {
		r.pinned = true
		m.results[scanID][k] = r
	}
}

// imageOf reads picture index of a page of a scan, with its data copied; the caller holds m.mu.
func (m *Store) imageOf(scanID, pagePath string, strategy store.Strategy, index int) (store.PageImage, error) {
	r := m.results[scanID][store.PageKey{PagePath: pagePath, Strategy: strategy}]
	if index < 0 || index >= len(r.images) {
		return store.PageImage{}, store.NotFound("image")
	}
	im := r.images[index]
	im.Timings, im.Data = slices.Clone(im.Timings), slices.Clone(im.Data)
	return im, nil
}

func (m *Store) PageImages(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) ([]store.PageImage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return nil, store.NotFound("scan")
	}
	out := []store.PageImage{}
	for _, im := range m.results[scanID][store.PageKey{PagePath: pagePath, Strategy: strategy}].images {
		im.Timings, im.Data = slices.Clone(im.Timings), nil
		out = append(out, im)
	}
	return out, nil
}

func (m *Store) PageImage(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy, index int) (store.PageImage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return store.PageImage{}, store.NotFound("image")
	}
	return m.imageOf(scanID, pagePath, strategy, index)
}

func (m *Store) ReportImage(ctx context.Context, r store.Report, pagePath string, strategy store.Strategy, index int) (store.PageImage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.imageOf(r.ScanID, pagePath, strategy, index)
}

func (m *Store) ComparePairs(ctx context.Context, userID, fromScanID, toScanID string) (store.ScanPairs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	to, ok := m.ownedScan(userID, toScanID)
	from, found := m.scans[fromScanID]
	if !ok || !found || from.SiteID != to.SiteID {
		return store.ScanPairs{}, store.NotFound("scan")
	}
	return m.pairsLocked(&from, to)
}

func (m *Store) PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	to, ok := m.ownedScan(userID, scanID)
	if !ok {
		return store.ScanPairs{}, store.NotFound("scan")
	}
	var prev *store.Scan
	for _, c := range m.scans {
		if c.SiteID != to.SiteID || c.Status != store.StatusComplete || c.ID == to.ID || c.CompletedAt == nil {
			continue
		}
		if to.CompletedAt != nil && !(c.CompletedAt.Before(*to.CompletedAt) || c.CompletedAt.Equal(*to.CompletedAt) && c.ID < to.ID) {
			continue
		}
		if prev == nil || c.CompletedAt.After(*prev.CompletedAt) || c.CompletedAt.Equal(*prev.CompletedAt) && c.ID > prev.ID {
			c := c
			prev = &c
		}
	}
	return m.pairsLocked(prev, to)
}

// pairsLocked is the ScanPairs of scans from (nil: none) and to, as Postgres's pairsSQL reads
// them; the caller holds m.mu.
func (m *Store) pairsLocked(from *store.Scan, to store.Scan) (store.ScanPairs, error) {
	out := store.ScanPairs{To: cloneScan(to), Pairs: []store.RunPair{}}
	if from == nil {
		return out, nil
	}
	f := cloneScan(*from)
	out.From = &f
	side := func(scanID string, r memResult) (store.PageResult, error) {
		p := metricsOf(scanID, r.result)
		p.PageURL, p.Runs = r.result.PageURL, r.result.Runs
		var err error
		p.Explain, err = store.DecodeExplain(r.explain)
		return p, err
	}
	for _, rb := range m.sortedResults(from.ID) {
		if rb.result == nil {
			continue
		}
		ra, ok := m.results[to.ID][store.PageKey{PagePath: rb.result.PagePath, Strategy: rb.result.Strategy}]
		if !ok || ra.result == nil {
			continue
		}
		var pair store.RunPair
		var err error
		if pair.Before, err = side(from.ID, rb); err != nil {
			return out, err
		}
		if pair.After, err = side(to.ID, ra); err != nil {
			return out, err
		}
		out.Pairs = append(out.Pairs, pair)
	}
	return out, nil
}

func (m *Store) RunImages(ctx context.Context, userID string, runs []store.Run, maxBytes int) ([][]store.PageImage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]store.PageImage, len(runs))
	for i, r := range runs {
		out[i] = []store.PageImage{}
		if _, ok := m.ownedScan(userID, r.ScanID); !ok {
			continue
		}
		for _, im := range m.results[r.ScanID][store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}].images {
			im.Timings, im.Data = slices.Clone(im.Timings), slices.Clone(im.Data)
			if len(im.Data) > maxBytes {
				im.Data = nil
			}
			out[i] = append(out[i], im)
		}
	}
	return out, nil
}
