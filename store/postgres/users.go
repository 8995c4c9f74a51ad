package postgres

import (
	"context"
	"database/sql"
	"time"

	"sitepulse/store"
)

// CreateUser stores the account with its personal workspace, the user its owner, together.
func (p *Store) CreateUser(ctx context.Context, u store.User) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO users (id, email, password_hash, notify_regressions, created_at)
			VALUES ($1, $2, $3, $4, $5)`, u.ID, u.Email, u.PasswordHash, u.NotifyRegressions, store.Now(u.CreatedAt))
		if err != nil {
			return pgErr("create user", err)
		}
		_, err = tx.ExecContext(ctx, `WITH w AS (INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3))
			INSERT INTO memberships (workspace_id, user_id, role, created_at, notify_regressions) VALUES ($1, $4, 'owner', $3, $5)`,
			store.PersonalWorkspace(u.ID), store.PersonalWorkspaceName(u.Email), store.Now(u.CreatedAt), u.ID, u.NotifyRegressions)
		return pgErr("create personal workspace", err)
	})
}

const userCols = `id, email, password_hash, notify_regressions, created_at`

func scanUser(row rowScanner) (store.User, error) {
	var u store.User
	err := row.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.NotifyRegressions, &u.CreatedAt)
	u.CreatedAt = u.CreatedAt.UTC()
	return u, err
}

func (p *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(p.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE lower(email) = lower($1)`, email))
	return u, pgErr("user", err)
}

func (p *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	if !uuidOK(id) {
		return store.User{}, store.NotFound("user")
	}
	u, err := scanUser(p.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	return u, pgErr("user", err)
}

func (p *Store) SetPasswordHash(ctx context.Context, userID, hash string) error {
	if !uuidOK(userID) {
		return store.NotFound("user")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE users SET password_hash = $2 WHERE id = $1`, userID, hash)
	return pgErr("set password", affected(res, err, sql.ErrNoRows))
}

func (p *Store) SetNotifyRegressions(ctx context.Context, userID string, on bool) error {
	if !uuidOK(userID) {
		return store.NotFound("user")
	}
	// The account's setting is its personal workspace's (the digest reads memberships).
	res, err := p.db.ExecContext(ctx, `WITH m AS (UPDATE memberships SET notify_regressions = $2 WHERE workspace_id = $1 AND user_id = $1)
		UPDATE users SET notify_regressions = $2 WHERE id = $1`, userID, on)
	return pgErr("set notifications", affected(res, err, sql.ErrNoRows))
}

func (p *Store) CreateSession(ctx context.Context, s store.Session) error {
	_, err := p.db.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, csrf, created_at, expires_at, seen_at)
		VALUES ($1, $2, $3, $4, $5, $4)`, s.TokenHash, s.UserID, s.CSRF, store.Now(s.CreatedAt), store.Now(s.ExpiresAt))
	return pgErr("create session", err)
}

func (p *Store) TouchSession(ctx context.Context, tokenHash string, now time.Time) error {
	_, err := p.db.ExecContext(ctx, `UPDATE sessions SET seen_at = $2 WHERE token_hash = $1`, tokenHash, store.Now(now))
	return pgErr("touch session", err)
}

func (p *Store) SessionByHash(ctx context.Context, tokenHash string, now time.Time) (store.Session, error) {
	var s store.Session
	u := &s.User
	err := p.db.QueryRowContext(ctx, `SELECT s.token_hash, s.user_id, s.csrf, s.created_at, s.expires_at, s.seen_at,
		u.id, u.email, u.password_hash, u.notify_regressions, u.created_at
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, now).
		Scan(&s.TokenHash, &s.UserID, &s.CSRF, &s.CreatedAt, &s.ExpiresAt, &s.SeenAt,
			&u.ID, &u.Email, &u.PasswordHash, &u.NotifyRegressions, &u.CreatedAt)
	s.CreatedAt, s.ExpiresAt, s.SeenAt, u.CreatedAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC(), s.SeenAt.UTC(), u.CreatedAt.UTC()
	return s, pgErr("session", err)
}

func (p *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := p.db.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	return pgErr("delete session", err)
}

// CreateAPIKey stores a key for its workspace (the maker's personal one when empty), when the
// maker may edit there; ErrNotFound otherwise.
func (p *Store) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	if k.WorkspaceID == "" {
		k.WorkspaceID = store.PersonalWorkspace(k.UserID)
	}
	if !uuidOK(k.UserID, k.WorkspaceID) {
		return store.NotFound("workspace")
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, key_hash, prefix, scope, created_at, workspace_id)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE `+writable("$8::uuid", 2),
		k.ID, k.UserID, k.Name, k.KeyHash, k.Prefix, k.Scope, store.Now(k.CreatedAt), k.WorkspaceID)
	return pgErr("create api key", affected(res, err, sql.ErrNoRows))
}

const keyCols = `k.id, k.user_id, k.name, k.key_hash, k.prefix, k.scope, k.created_at, k.last_used_at, k.workspace_id, w.name
	FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id`

func scanKey(row rowScanner) (store.APIKey, error) {
	var k store.APIKey
	var used sql.NullTime
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.KeyHash, &k.Prefix, &k.Scope, &k.CreatedAt, &used, &k.WorkspaceID, &k.WorkspaceName)
	k.CreatedAt, k.LastUsedAt = k.CreatedAt.UTC(), timePtr(used)
	return k, err
}

func (p *Store) APIKeys(ctx context.Context, userID string) ([]store.APIKey, error) {
	if !uuidOK(userID) {
		return []store.APIKey{}, nil
	}
	return queryAll(ctx, p.db, "api keys", scanKey, `SELECT `+keyCols+`
		WHERE k.user_id = $1 AND k.revoked_at IS NULL ORDER BY k.created_at DESC, k.id DESC`, userID)
}

func (p *Store) APIKeyByHash(ctx context.Context, keyHash string, now time.Time) (store.APIKey, error) {
	// A key works while its maker is a member of its workspace.
	stmt, err := p.prepared(ctx, `SELECT `+keyCols+` WHERE k.key_hash = $1 AND k.revoked_at IS NULL
		AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = k.workspace_id AND m.user_id = k.user_id)`)
	if err != nil {
		return store.APIKey{}, pgErr("api key", err)
	}
	k, err := scanKey(stmt.QueryRowContext(ctx, keyHash))
	if err != nil {
		return store.APIKey{}, pgErr("api key", err)
	}
	k.LastUsedAt, err = p.recordKeyUse(ctx, k.ID, k.LastUsedAt, now)
	return k, err
}

// keyUseSQL sets the last use of key $1 to $2 when the recorded use is at or before $3,
// skipping the row when another request is recording it.
const keyUseSQL = `UPDATE api_keys a SET last_used_at = $2 FROM (SELECT id FROM api_keys
	WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3) FOR UPDATE SKIP LOCKED) l WHERE a.id = l.id`

// recordKeyUse records the use at now of the key whose recorded use is last, when that is
// KeyUseGranularity old or more, and returns the key's last use. APIKeyByHash and
// BudgetInputsByKey share it, so a key's use is recorded by one rule, and their lookups stay
// reads: a write, and its WAL flush at commit, happens once a minute per key, not per request.
// When many requests of one key cross the minute together, one records the use and the others
// skip the locked row rather than queue behind it.
func (p *Store) recordKeyUse(ctx context.Context, keyID string, last *time.Time, now time.Time) (*time.Time, error) {
	now = store.Now(now)
	if last != nil && last.After(now.Add(-store.KeyUseGranularity)) {
		return last, nil
	}
	stmt, err := p.prepared(ctx, keyUseSQL)
	if err != nil {
		return last, pgErr("record api key use", err)
	}
	res, err := stmt.ExecContext(ctx, keyID, now, now.Add(-store.KeyUseGranularity))
	if err != nil {
		return last, pgErr("record api key use", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return last, nil
	}
	return &now, nil
}

func (p *Store) RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error {
	if !uuidOK(userID, keyID) {
		return store.NotFound("api key")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $3
		WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`, keyID, userID, store.Now(now))
	return pgErr("revoke api key", affected(res, err, sql.ErrNoRows))
}
