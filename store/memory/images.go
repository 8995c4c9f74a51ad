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
