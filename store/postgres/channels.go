package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

// CreateChannel counts after locking the user's row, as CreateSiteWithin does.
func (p *Store) CreateChannel(ctx context.Context, c store.Channel) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if !uuidOK(c.ID, c.UserID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, c.UserID); err != nil {
			return pgErr("lock user", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM channels WHERE user_id = $1`, c.UserID).Scan(&n); err != nil {
			return pgErr("count channels", err)
		}
		if n >= store.MaxChannelsPerUser {
			return fmt.Errorf("%d channels: %w", n, store.ErrLimit)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO channels (id, user_id, kind, name, url_sealed, secret_sealed, events, site_ids, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8::uuid[], $9)`, c.ID, c.UserID, c.Kind, c.Name, c.URLSealed, c.SecretSealed,
			pq.StringArray(c.Events), pq.StringArray(c.SiteIDs), store.Now(c.CreatedAt))
		return pgErr("create channel", err)
	})
}

const channelCols = `id, user_id, kind, name, url_sealed, secret_sealed, events, site_ids::text[], created_at, failing_since`

func scanChannel(r rowScanner) (store.Channel, error) {
	var c store.Channel
	var events, sites pq.StringArray
	var failing sql.NullTime
	err := r.Scan(&c.ID, &c.UserID, &c.Kind, &c.Name, &c.URLSealed, &c.SecretSealed, &events, &sites, &c.CreatedAt, &failing)
	c.Events, c.SiteIDs, c.CreatedAt = nonNil(events), nonNil(sites), c.CreatedAt.UTC()
	if failing.Valid {
		t := failing.Time.UTC()
		c.FailingSince = &t
	}
	return c, err
}

func (p *Store) ChannelsOf(ctx context.Context, userID string) ([]store.Channel, error) {
	if !uuidOK(userID) {
		return []store.Channel{}, nil
	}
	out, err := queryAll(ctx, p.db, "channels", scanChannel, `SELECT `+channelCols+` FROM channels WHERE user_id = $1 ORDER BY created_at, id`, userID)
	if out == nil && err == nil {
		out = []store.Channel{}
	}
	return out, err
}

func (p *Store) Channel(ctx context.Context, userID, channelID string) (store.Channel, error) {
	if !uuidOK(userID, channelID) {
		return store.Channel{}, store.NotFound("channel")
	}
	c, err := scanChannel(p.db.QueryRowContext(ctx, `SELECT `+channelCols+` FROM channels WHERE id = $1 AND user_id = $2`, channelID, userID))
	return c, pgErr("channel", err)
}

func (p *Store) DeleteChannel(ctx context.Context, userID, channelID string) error {
	if !uuidOK(userID, channelID) {
		return store.NotFound("channel")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM channels WHERE id = $1 AND user_id = $2`, channelID, userID)
	return pgErr("delete channel", affected(res, err, store.NotFound("channel")))
}

func (p *Store) RecordDelivery(ctx context.Context, userID string, d store.Delivery) error {
	if !uuidOK(userID, d.ChannelID, d.ID) {
		return store.NotFound("channel")
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO deliveries (id, channel_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at)
		SELECT $1, c.id, $4, $5, $6, $7, $8, $9, $10, $11 FROM channels c WHERE c.id = $2 AND c.user_id = $3
		ON CONFLICT (channel_id, event_id) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
			next_at = excluded.next_at, last_status = excluded.last_status, last_error = excluded.last_error`,
		d.ID, d.ChannelID, userID, d.EventID, d.EventType, d.State, d.Attempts, nullTime(d.NextAt), d.LastStatus, d.LastError, store.Now(d.CreatedAt))
	return pgErr("record delivery", affected(res, err, store.NotFound("channel")))
}

func (p *Store) DeliveriesOf(ctx context.Context, userID, channelID string, limit int) ([]store.Delivery, error) {
	if _, err := p.Channel(ctx, userID, channelID); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, p.db, "deliveries", func(r rowScanner) (store.Delivery, error) {
		var d store.Delivery
		var next sql.NullTime
		err := r.Scan(&d.ID, &d.ChannelID, &d.EventID, &d.EventType, &d.State, &d.Attempts, &next, &d.LastStatus, &d.LastError, &d.CreatedAt)
		d.CreatedAt = d.CreatedAt.UTC()
		if next.Valid {
			t := next.Time.UTC()
			d.NextAt = &t
		}
		return d, err
	}, `SELECT id, channel_id, event_id, event_type, state, attempts, next_at, last_status, last_error, created_at
		FROM deliveries WHERE channel_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, channelID, limit)
	if out == nil && err == nil {
		out = []store.Delivery{}
	}
	return out, err
}

func (p *Store) SwapBudgetState(ctx context.Context, siteID string, broken bool) (bool, error) {
	if !uuidOK(siteID) {
		return false, store.NotFound("site")
	}
	var was bool
	err := p.db.QueryRowContext(ctx, `WITH old AS (SELECT id, budgets_broken FROM sites WHERE id = $1 FOR UPDATE)
		UPDATE sites s SET budgets_broken = $2 FROM old WHERE s.id = old.id RETURNING old.budgets_broken`, siteID, broken).Scan(&was)
	return was, pgErr("swap budget state", err)
}

func (p *Store) SetChannelFailing(ctx context.Context, userID, channelID string, since *time.Time) error {
	if !uuidOK(userID, channelID) {
		return store.NotFound("channel")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE channels SET failing_since = CASE WHEN $3::timestamptz IS NULL THEN NULL
		ELSE coalesce(failing_since, $3) END WHERE id = $1 AND user_id = $2`, channelID, userID, nullTime(since))
	return pgErr("set channel failing", affected(res, err, store.NotFound("channel")))
}
