package postgres

import (
	"context"
	"database/sql"

	"github.com/lib/pq"

	"sitepulse/store"
)

// The reads of store.Explains' pictures: each one statement, the reader's membership inside it
// as in the scan page's reads (readable).

const imageCols = `i.idx, i.mime, i.width, i.height, i.timings, i.final, octet_length(i.data)`

func scanImage(row rowScanner, data *[]byte) (store.PageImage, error) {
	var im store.PageImage
	var timings pq.Int64Array
	dest := []any{&im.Index, &im.MIME, &im.Width, &im.Height, &timings, &im.Final, &im.Bytes}
	if data != nil {
		dest = append(dest, data)
	}
	if err := row.Scan(dest...); err != nil {
		return im, err
	}
	im.Timings = ints(timings)
	return im, nil
}

func ints(a pq.Int64Array) []int {
	out := make([]int, len(a))
	for i, v := range a {
		out[i] = int(v)
	}
	return out
}

func (p *Store) PageImages(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) ([]store.PageImage, error) {
	if !uuidOK(userID, scanID) {
		return nil, store.NotFound("scan")
	}
	// The owned scan left-joined to its pictures: one row of NULLs when it has none, no row
	// when it is not the user's.
	rows, err := p.db.QueryContext(ctx, `SELECT `+imageCols+` FROM scans c JOIN sites s ON s.id = c.site_id
		LEFT JOIN page_images i ON i.scan_id = c.id AND i.page_path = $3 AND i.strategy = $4
		WHERE c.id = $1 AND `+readable("s.workspace_id", 2)+` ORDER BY i.idx`, scanID, userID, pagePath, strategy)
	if err != nil {
		return nil, pgErr("page images", err)
	}
	defer rows.Close()
	out := []store.PageImage{}
	owned := false
	for rows.Next() {
		owned = true
		var idx, width, height, size sql.NullInt64
		var mime sql.NullString
		var final sql.NullBool
		var timings pq.Int64Array
		if err := rows.Scan(&idx, &mime, &width, &height, &timings, &final, &size); err != nil {
			return nil, pgErr("page images", err)
		}
		if !idx.Valid {
			continue
		}
		out = append(out, store.PageImage{Index: int(idx.Int64), MIME: mime.String, Width: int(width.Int64), Height: int(height.Int64),
			Final: final.Bool, Bytes: int(size.Int64), Timings: ints(timings)})
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("page images", err)
	}
	if !owned {
		return nil, store.NotFound("scan")
	}
	return out, nil
}

func (p *Store) PageImage(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy, index int) (store.PageImage, error) {
	if !uuidOK(userID, scanID) || index < 0 || index >= store.MaxPageImages {
		return store.PageImage{}, store.NotFound("image")
	}
	var data []byte
	im, err := scanImage(p.db.QueryRowContext(ctx, `SELECT `+imageCols+`, i.data FROM page_images i
		JOIN scans c ON c.id = i.scan_id JOIN sites s ON s.id = c.site_id
		WHERE i.scan_id = $1 AND i.page_path = $3 AND i.strategy = $4 AND i.idx = $5 AND `+readable("s.workspace_id", 2),
		scanID, userID, pagePath, strategy, index), &data)
	im.Data = data
	return im, pgErr("image", err)
}

func (p *Store) ReportImage(ctx context.Context, r store.Report, pagePath string, strategy store.Strategy, index int) (store.PageImage, error) {
	if !uuidOK(r.ScanID) || index < 0 || index >= store.MaxPageImages {
		return store.PageImage{}, store.NotFound("image")
	}
	var data []byte
	im, err := scanImage(p.db.QueryRowContext(ctx, `SELECT `+imageCols+`, i.data FROM page_images i
		WHERE i.scan_id = $1 AND i.page_path = $2 AND i.strategy = $3 AND i.idx = $4`,
		r.ScanID, pagePath, strategy, index), &data)
	im.Data = data
	return im, pgErr("image", err)
}

func (p *Store) RunImages(ctx context.Context, userID string, runs []store.Run, maxBytes int) ([][]store.PageImage, error) {
	out := make([][]store.PageImage, len(runs))
	var scans, paths, strategies []string
	var at []int64
	for i, r := range runs {
		out[i] = []store.PageImage{}
		if uuidOK(r.ScanID) {
			scans, paths, strategies, at = append(scans, r.ScanID), append(paths, r.PagePath), append(strategies, string(r.Strategy)), append(at, int64(i))
		}
	}
	if len(scans) == 0 || !uuidOK(userID) {
		return out, nil
	}
	rows, err := p.db.QueryContext(ctx, `SELECT r.n, `+imageCols+`, CASE WHEN octet_length(i.data) <= $6 THEN i.data END
		FROM unnest($2::uuid[], $3::text[], $4::text[], $5::bigint[]) AS r(scan_id, page_path, strategy, n)
		JOIN page_images i ON i.scan_id = r.scan_id AND i.page_path = r.page_path AND i.strategy = r.strategy
		JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id
		WHERE `+readable("s.workspace_id", 1)+` ORDER BY r.n, i.idx`,
		userID, pq.Array(scans), pq.Array(paths), pq.Array(strategies), pq.Array(at), maxBytes)
	if err != nil {
		return nil, pgErr("run images", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var data []byte
		var timings pq.Int64Array
		var im store.PageImage
		if err := rows.Scan(&n, &im.Index, &im.MIME, &im.Width, &im.Height, &timings, &im.Final, &im.Bytes, &data); err != nil {
			return nil, pgErr("run images", err)
		}
		im.Timings, im.Data = ints(timings), data
		out[n] = append(out[n], im)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr("run images", err)
	}
	return out, nil
}
