package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"

	"sitepulse/store"
)

func (p *Store) AppendLog(ctx context.Context, events ...store.LogEvent) ([]store.LogEvent, error) {
	rows := make([]store.LogEvent, len(events))
	for i, e := range events {
		e.Details = maps.Clone(e.Details)
		e.Normalize()
		if err := e.Validate(); err != nil {
			return nil, err
		}
		rows[i] = e
	}
	insert := func(q querier1, i int) error {
		e := rows[i]
		details, err := json.Marshal(e.Details)
		if err != nil {
			return err
		}
		err = q.QueryRowContext(ctx, `INSERT INTO security_log (workspace_id, actor_id, actor_email, kind, target, details, ip, user_agent, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq`,
			e.WorkspaceID, nullString(e.ActorID), e.ActorEmail, e.Kind, e.Target, string(details), e.IP, e.UserAgent, e.At).Scan(&rows[i].Seq)
		return pgErr("append to the security log", err)
	}
	switch len(rows) {
	case 0:
		return rows, nil
	case 1: // one statement, its own transaction: the common case costs one round trip
		if err := insert(p.db, 0); err != nil {
			return nil, err
		}
		return rows, nil
	}
	err := p.tx(ctx, func(tx *sql.Tx) error {
		for i := range rows {
			if err := insert(tx, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (p *Store) LogOf(ctx context.Context, f store.LogFilter) ([]store.LogEvent, error) {
	if !uuidOK(f.WorkspaceID) {
		return []store.LogEvent{}, nil
	}
	q := strings.Builder{}
	q.WriteString(`SELECT seq, workspace_id, coalesce(actor_id::text, ''), actor_email, kind, target, details, ip, user_agent, at
		FROM security_log WHERE workspace_id = $1`)
	args := []any{f.WorkspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	switch {
	case strings.HasSuffix(f.Kind, "."):
		q.WriteString(` AND starts_with(kind, ` + arg(f.Kind) + `)`)
	case f.Kind != "":
		q.WriteString(` AND kind = ` + arg(f.Kind))
	}
	if f.Actor != "" {
		a := arg(f.Actor)
		q.WriteString(` AND (lower(actor_email) = lower(` + a + `) OR actor_id::text = ` + a + `)`)
	}
	if !f.From.IsZero() {
		q.WriteString(` AND at >= ` + arg(store.Now(f.From)))
	}
	if !f.To.IsZero() {
		q.WriteString(` AND at < ` + arg(store.Now(f.To)))
	}
	if f.After != nil {
		q.WriteString(` AND (at, seq) < (` + arg(store.Now(f.After.At)) + `, ` + arg(f.After.Seq) + `)`)
	}
	q.WriteString(` ORDER BY at DESC, seq DESC LIMIT ` + arg(f.PageLimit()))
	return queryAll(ctx, p.db, "security log", func(r rowScanner) (e store.LogEvent, err error) {
		var details []byte
		if err = r.Scan(&e.Seq, &e.WorkspaceID, &e.ActorID, &e.ActorEmail, &e.Kind, &e.Target, &details, &e.IP, &e.UserAgent, &e.At); err != nil {
			return e, err
		}
		e.At = e.At.UTC()
		e.Details = map[string]string{}
		return e, json.Unmarshal(details, &e.Details)
	}, q.String(), args...)
}

func (p *Store) PruneLog(ctx context.Context, before time.Time) (int, error) {
	var n int
	err := p.db.QueryRowContext(ctx, `SELECT prune_security_log($1)`, store.Now(before)).Scan(&n)
	return n, pgErr("prune the security log", err)
}

// querier1 is a *sql.DB or *sql.Tx, for a statement that answers one row.
type querier1 interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
