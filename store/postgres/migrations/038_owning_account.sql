-- The claim's accounts (issue 44 item 1): one account owning two workspaces held every scan
-- worker, since SCANS_PER_WORKSPACE bounded each workspace alone. The claim (claimSQL in
-- store/postgres/queue.go) now counts the running jobs of each workspace's owning account too,
-- lets accounts take turns before workspaces, and gives an account at a worker's cap no more
-- there, whichever of its workspaces the job is of.

-- owning_account and claimSQL are written twice: store/memory/queue.go's ClaimJob (with
-- oldestOwner) is the same rule in Go. The contract tests testFairClaims and
-- testFairClaimsPerAccount keep the two equal (see rulesWrittenTwice in
-- store/storetest/twice_test.go): change both, run them on both stores.

-- owning_account is a workspace's oldest owner, the account its jobs count against; NULL for
-- none (a job of no workspace counts as one of an account running none).
CREATE FUNCTION owning_account(ws uuid) RETURNS uuid LANGUAGE sql STABLE AS $$
    SELECT user_id FROM memberships WHERE workspace_id = ws AND role = 'owner'
    ORDER BY created_at, user_id LIMIT 1
$$;
