-- A client report's link kept sealed (AES-GCM under PLATFORM_TOKEN_KEY, bound to the report's
-- id) beside its hash, so the Reports list can show and copy a live report's link again
-- (issue 37). NULL: a report made before, or without the key; its link cannot be shown.
ALTER TABLE reports ADD COLUMN token_sealed text;

-- The sites list as a triage board (issue 37): what a site's latest completed scan left, kept
-- by the budget-state swap of its alerts job (SwapBudgetState) so the list reads it with the
-- site: the metrics over budget (empty for a state kept before this migration) and how many
-- regressions it confirmed against the scan before it.
ALTER TABLE sites ADD COLUMN broken_budgets text[] NOT NULL DEFAULT '{}';
ALTER TABLE sites ADD COLUMN regressions integer NOT NULL DEFAULT 0;
