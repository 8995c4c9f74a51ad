-- One durable queue for every kind of work (issue 27): a job has a kind, which names the worker
-- that runs it, and JSON args. Scan jobs keep running as kind 'scan' with args {"scanId": ...}.
-- scan_id stays the scan a scan job runs (EnqueueScan sets it, whatever the kind's name), so that
-- giving the job up fails that scan and deleting the site deletes the job; it is NULL for other
-- jobs, whose args may still name a scan (a digest is not its scan's job).
ALTER TABLE jobs RENAME COLUMN queue TO kind;
ALTER TABLE jobs ADD COLUMN args jsonb NOT NULL DEFAULT '{}';
UPDATE jobs SET args = jsonb_build_object('scanId', scan_id);
ALTER TABLE jobs ALTER COLUMN scan_id DROP NOT NULL;
CREATE INDEX jobs_scan ON jobs (scan_id);

-- A kind may ask for more attempts than 3 (a digest outlasts an SMTP outage), so a snooze, which
-- raises max_attempts by one without spending an attempt, is counted apart.
ALTER TABLE jobs ADD COLUMN snoozes integer NOT NULL DEFAULT 0;
UPDATE jobs SET snoozes = greatest(max_attempts - 3, 0);

-- Finished jobs are deleted a week after they finished (the cleaner).
ALTER TABLE jobs ADD COLUMN finalized_at timestamptz;
UPDATE jobs SET finalized_at = coalesce(heartbeat_at, run_at) WHERE state IN ('completed', 'discarded');
CREATE INDEX jobs_finalized ON jobs (finalized_at) WHERE state IN ('completed', 'discarded');

DROP INDEX jobs_runnable;
CREATE INDEX jobs_runnable ON jobs (kind, run_at, id) WHERE state = 'available';
