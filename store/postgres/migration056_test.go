package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 056 and the months made after it: each month's pictures reference that month's page
// rows (so a month's rows detach with nothing to check), none references page_results as a
// whole, and a picture of no row is refused as before.
func TestMigration056PicturesReferenceTheirMonth(t *testing.T) {
	ctx := context.Background()
	_, upgrade := olderSchema(t, 55)
	s := upgrade()
	now := time.Now().UTC()
	if _, err := s.PruneMonths(ctx, now.AddDate(0, store.MonthsAhead+2, 0)); err != nil { // makes the months after 056
		t.Fatal(err)
	}
	var parent int
	must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'page_images'::regclass AND contype = 'f'`).Scan(&parent))
	if parent != 0 {
		t.Errorf("page_images has %d foreign keys of its own, want none (each partition has its month's)", parent)
	}
	rows, err := s.DB().QueryContext(ctx, `SELECT c.relname, coalesce((SELECT r.relname FROM pg_constraint k JOIN pg_class r ON r.oid = k.confrelid
		WHERE k.conrelid = c.oid AND k.contype = 'f' AND k.confdeltype = 'c'), '')
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'page_images'::regclass ORDER BY 1`)
	must(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var part, refs string
		must(t, rows.Scan(&part, &refs))
		if want := "page_results" + part[len("page_images"):]; refs != want {
			t.Errorf("%s references %q, want %s, cascading", part, refs, want)
		}
		n++
	}
	must(t, rows.Err())
	if n < store.MonthsAhead+2 { // the default, the month and those ahead (the months before, empty, dropped)
		t.Errorf("%d picture partitions, want at least %d", n, store.MonthsAhead+2)
	}
	// A month drop stopped between its two transactions (detached, not dropped) is finished by
	// the next run; a month still ahead is then made again, as a partition.
	ahead := "_p" + now.AddDate(0, store.MonthsAhead+2, 0).Format("200601")
	_, err = s.DB().ExecContext(ctx, `ALTER TABLE page_images DETACH PARTITION page_images`+ahead+`;
		ALTER TABLE page_results DETACH PARTITION page_results`+ahead)
	must(t, err)
	if _, err := s.PruneMonths(ctx, now.AddDate(0, store.MonthsAhead+2, 0)); err != nil {
		t.Fatal(err)
	}
	var standalone, partitions int
	must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE NOT relispartition), count(*) FILTER (WHERE relispartition)
		FROM pg_class WHERE relname IN ('page_images`+ahead+`', 'page_results`+ahead+`') AND relnamespace = current_schema()::regnamespace`).Scan(&standalone, &partitions))
	if standalone != 0 || partitions != 2 {
		t.Errorf("after a drop stopped halfway: %d tables of their own, %d partitions of %s; want 0 and 2", standalone, partitions, ahead)
	}
	_, err = s.DB().ExecContext(ctx, `INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, data, workspace_id, scanned_at)
		VALUES ($1, '/', 'mobile', 0, 'image/webp', '\x00', $1, $2)`, store.NewID(), now)
	if err == nil {
		t.Error("a picture of no page row was stored")
	}
}
