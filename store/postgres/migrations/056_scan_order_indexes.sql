-- The size SitePulse is sized for (issue 46: 2,000 sites, 730,000 scans a year). The reads of a
-- site's scans order by (completed_at DESC, id DESC) or (created_at DESC, id DESC) with a LIMIT
-- (the latest scan, the latest two, the trend, the history, the sites list's latest scan, the
-- month drop's latest two of every site): indexes on (site_id, time) alone left Postgres an
-- incremental sort and a heap visit per candidate row; with id in the key the LIMIT reads just
-- its rows. The month drop's check reads only the scans whose details are not pruned yet
-- (scans_unpruned_created): a month whose details are all pruned is checked without reading its
-- 60,000 scans.
-- Locks: each CREATE INDEX holds a SHARE lock on scans while it builds (reads go on; a scan's
-- insert or update waits), 1-2 s at 730,000 scans (.ci/README.md, "Partitions").
CREATE INDEX scans_site_completed_id ON scans (site_id, completed_at DESC, id DESC) WHERE status = 'complete';
DROP INDEX scans_site_completed;
ALTER INDEX scans_site_completed_id RENAME TO scans_site_completed;
CREATE INDEX scans_site_created_id ON scans (site_id, created_at DESC, id DESC);
DROP INDEX scans_site_created;
ALTER INDEX scans_site_created_id RENAME TO scans_site_created;
CREATE INDEX scans_unpruned_created ON scans (created_at) INCLUDE (id, site_id, status, completed_at) WHERE details_pruned_at IS NULL;

-- A month's pictures reference their month's page rows, partition to partition, instead of
-- page_images referencing page_results as a whole: detaching a page_results partition that a
-- partitioned foreign key references makes Postgres check that no picture of any month refers to
-- it, under the ACCESS EXCLUSIVE lock on page_results (0.9 s at 640,000 pictures, growing with
-- them). A picture and its row share scanned_at, so they share the month; the month drop drops
-- the pictures' partition first, which takes its foreign key with it, and the rows' partition
-- then detaches with nothing to check. Deleting a row still deletes its pictures (the partition's
-- foreign key cascades), and a picture of no row is still refused. NOT VALID: the rows there
-- now were checked by the foreign key this replaces, in this same transaction.
DO $$
DECLARE
    fk text;
    part text;
BEGIN
    FOR fk IN SELECT conname FROM pg_constraint WHERE conrelid = 'page_images'::regclass AND contype = 'f' AND confrelid = 'page_results'::regclass LOOP
        EXECUTE format('ALTER TABLE page_images DROP CONSTRAINT %I', fk);
    END LOOP;
    FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'page_images'::regclass LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (scan_id, page_path, strategy, scanned_at) REFERENCES %I ON DELETE CASCADE NOT VALID',
            part, part || '_row', replace(part, 'page_images', 'page_results'));
    END LOOP;
END $$;
