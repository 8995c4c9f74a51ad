package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"sitepulse/store"
)

// takeLoginSQL counts an attempt when the window is over (a new window), the burst is not
// spent, or the wait since the last counted attempt is over; else it changes nothing and
// returns no row. $2 is now, $3 the start of the window that now ends, $4 the burst, $5 now
// plus the wait between attempts past the burst. The CTE first drops other accounts' rows
// whose window and wait are over.
const takeLoginSQL = `WITH swept AS (
	DELETE FROM login_attempts WHERE since <= $3 AND next_at <= $2 AND account_key <> $1
)
INSERT INTO login_attempts AS a (account_key, since, failures, next_at)
VALUES ($1, $2, 1, CASE WHEN 1 >= $4 THEN $5 ELSE $2 END)
ON CONFLICT (account_key) DO UPDATE SET
	since    = CASE WHEN a.since <= $3 THEN $2 ELSE a.since END,
	failures = CASE WHEN a.since <= $3 THEN 1 ELSE a.failures + 1 END,
	next_at  = CASE WHEN (CASE WHEN a.since <= $3 THEN 1 ELSE a.failures + 1 END) >= $4 THEN $5 ELSE a.next_at END
WHERE a.since <= $3 OR a.failures < $4 OR a.next_at <= $2
RETURNING failures`

func (p *Store) TakeLoginAttempt(ctx context.Context, key string, now time.Time, limit store.LoginLimit) (bool, time.Duration, error) {
	now = store.Now(now)
	var failures int
	err := p.db.QueryRowContext(ctx, takeLoginSQL, key, now, now.Add(-limit.Window), limit.Burst, now.Add(limit.Every)).Scan(&failures)
	if err == nil {
		return true, 0, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, 0, pgErr("take login attempt", err)
	}
	var next time.Time
	if err := p.db.QueryRowContext(ctx, `SELECT next_at FROM login_attempts WHERE account_key = $1`, key).Scan(&next); err != nil {
		if errors.Is(err, sql.ErrNoRows) { // cleared in between: the next attempt may go
			return false, 0, nil
		}
		return false, 0, pgErr("login attempt wait", err)
	}
	return false, max(next.Sub(now), 0), nil
}

func (p *Store) ClearLoginAttempts(ctx context.Context, key string) error {
	_, err := p.db.ExecContext(ctx, `DELETE FROM login_attempts WHERE account_key = $1`, key)
	return pgErr("clear login attempts", err)
}
