-- Fair claims (issue 34): a job names the workspace it works for (a scan's site's workspace, a
-- delivery's channel's), so the one claim statement can prefer the workspaces with the fewest
-- jobs of the kind running and cap how many one workspace runs at once: one workspace's queue
-- no longer holds every worker while another's waits. Jobs of no workspace (digests, alert
-- planning, pruning) have none. Unfinished jobs learn theirs here; finished ones need none.
ALTER TABLE jobs ADD COLUMN workspace_id uuid;

UPDATE jobs j SET workspace_id = s.workspace_id
    FROM scans c JOIN sites s ON s.id = c.site_id
    WHERE j.scan_id = c.id AND j.state IN ('available', 'running');
UPDATE jobs SET workspace_id = coalesce(args->>'workspaceId', args->>'userId')::uuid
    WHERE kind = 'delivery' AND workspace_id IS NULL AND state IN ('available', 'running')
    AND coalesce(args->>'workspaceId', args->>'userId') ~ '^[0-9a-fA-F-]{36}$';

-- The claim counts each workspace's running jobs of the kind.
CREATE INDEX jobs_running_workspace ON jobs (kind, workspace_id) WHERE state = 'running';
