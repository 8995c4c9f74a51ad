-- A publish that comes while its site's scan runs is audited by one follow-up scan once that
-- scan ends (issue 43): a job of kind 'followup' per site waits, and the publishes after it join
-- it (EnqueueFollowUp). This index makes a second waiting one conflict, whoever inserts it.
CREATE UNIQUE INDEX jobs_one_follow_up ON jobs ((args->>'siteId')) WHERE kind = 'followup' AND state = 'available';
