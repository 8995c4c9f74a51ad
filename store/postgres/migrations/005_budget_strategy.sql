-- A budget applies to mobile, desktop or both strategies. 'both' is what every budget
-- meant before: scores against the scan's score, vitals against the worst page.
ALTER TABLE budgets ADD COLUMN strategy text NOT NULL DEFAULT 'both';
