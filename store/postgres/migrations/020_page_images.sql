-- Migration 020, issue 33: the screenshots of a run (store.PageImage), in a table of their own.
--
-- One row per distinct picture of a run (a filmstrip frame, the final screenshot, or both):
-- timings are the times the filmstrip shows it. Rows are written by the statement that stores
-- the result, and kept only for the latest two completed scans of each page and, pinned, for
-- both sides of every regression; the pruner (PruneDetails) releases the others, and every one
-- of a scan whose page details retention prunes. The foreign key takes them with their row.
CREATE TABLE page_images (
    scan_id   uuid NOT NULL,
    page_path text NOT NULL,
    strategy  text NOT NULL,
    idx       smallint NOT NULL CHECK (idx >= 0),
    mime      text NOT NULL CHECK (mime IN ('image/jpeg', 'image/webp', 'image/png')),
    width     integer NOT NULL DEFAULT 0,
    height    integer NOT NULL DEFAULT 0,
    timings   integer[] NOT NULL DEFAULT '{}',
    final     boolean NOT NULL DEFAULT false,
    pinned    boolean NOT NULL DEFAULT false,
    data      bytea NOT NULL,
    PRIMARY KEY (scan_id, page_path, strategy, idx),
    FOREIGN KEY (scan_id, page_path, strategy) REFERENCES page_results ON DELETE CASCADE
);
-- The pictures are JPEG already: Postgres need not try to compress them again.
ALTER TABLE page_images ALTER COLUMN data SET STORAGE EXTERNAL;

-- page_image_bytes is about how much one picture's row takes: its data and 100 B of the rest.
CREATE FUNCTION page_image_bytes(i page_images) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT 100 + pg_column_size(i.data)::bigint + octet_length(i.page_path)
$$;

-- scan_bytes counts a scan's pictures beside its page rows.
CREATE OR REPLACE FUNCTION scan_bytes(scan uuid) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT 300 + coalesce((SELECT sum(page_row_bytes(r)) FROM page_results r WHERE r.scan_id = scan), 0)::bigint
        + coalesce((SELECT sum(page_image_bytes(i)) FROM page_images i WHERE i.scan_id = scan), 0)::bigint
$$;
