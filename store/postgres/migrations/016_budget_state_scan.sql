-- Migration 016, issue 21: the budget-state swap remembers the scan that made it, and the state
-- before, so the alerts job of one scan, retried after a crash, gets the same answer again
-- instead of losing its budget.broken or budget.recovered.
ALTER TABLE sites ADD COLUMN budgets_scan_id uuid;
ALTER TABLE sites ADD COLUMN budgets_were_broken boolean NOT NULL DEFAULT false;
