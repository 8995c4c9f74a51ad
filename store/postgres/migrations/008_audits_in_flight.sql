-- The scan page shows how many audits of a running scan are in flight: its worker writes the
-- number about once a second while it audits, and 0 when the attempt stops auditing.
ALTER TABLE scans ADD COLUMN audits_in_flight int NOT NULL DEFAULT 0;
