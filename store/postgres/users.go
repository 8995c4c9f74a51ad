package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"sitepulse/store"
)

// CreateUser stores the account with its personal workspace, the user its owner, together.
func (p *Store) CreateUser(ctx context.Context, u store.User) error {
	return p.tx(ctx, func(tx *sql.Tx) error { return insertUser(ctx, tx, u) })
}

// insertUser stores the account with its personal workspace in tx (CreateUser,
// CreateIdentityUser).
func insertUser(ctx context.Context, tx *sql.Tx, u store.User) error {
	u.Email = store.CanonicalEmail(u.Email)
	_, err := tx.ExecContext(ctx, `INSERT INTO users (id, email, password_hash, notify_regressions, created_at)
		VALUES ($1, $2, $3, $4, $5)`, u.ID, u.Email, u.PasswordHash, u.NotifyRegressions, store.Now(u.CreatedAt))
	if err != nil {
		return pgErr("create user", err)
	}
	_, err = tx.ExecContext(ctx, `WITH w AS (INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3))
		INSERT INTO memberships (workspace_id, user_id, role, created_at, notify_regressions) VALUES ($1, $4, 'owner', $3, $5)`,
		store.PersonalWorkspace(u.ID), store.PersonalWorkspaceName(u.Email), store.Now(u.CreatedAt), u.ID, u.NotifyRegressions)
	return pgErr("create personal workspace", err)
}

const userCols = `id, email, password_hash, notify_regressions, created_at, COALESCE(password_changed_at, created_at)`

func scanUser(row rowScanner) (store.User, error) {
	var u store.User
	err := row.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.NotifyRegressions, &u.CreatedAt, &u.PasswordChangedAt)
	u.CreatedAt, u.PasswordChangedAt = u.CreatedAt.UTC(), u.PasswordChangedAt.UTC()
	return u, err
}

func (p *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(p.db.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE email = $1`, store.CanonicalEmail(email)))
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
	var checked any
	if s.SSOIssuer != "" {
		checked = store.Now(s.SSOCheckedAt)
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, csrf, created_at, expires_at, seen_at, sso_issuer, sso_subject, sso_checked_at)
		VALUES ($1, $2, $3, $4, $5, $4, $6, $7, $8)`, s.TokenHash, s.UserID, s.CSRF, store.Now(s.CreatedAt), store.Now(s.ExpiresAt), s.SSOIssuer, s.SSOSubject, checked)
	return pgErr("create session", err)
}

func (p *Store) TouchSession(ctx context.Context, tokenHash string, now time.Time) error {
	_, err := p.db.ExecContext(ctx, `UPDATE sessions SET seen_at = $2 WHERE token_hash = $1`, tokenHash, store.Now(now))
	return pgErr("touch session", err)
}

func (p *Store) SessionByHash(ctx context.Context, tokenHash string, now time.Time) (store.Session, error) {
	var s store.Session
	u := &s.User
	var checked sql.NullTime
	err := p.db.QueryRowContext(ctx, `SELECT s.token_hash, s.user_id, s.csrf, s.created_at, s.expires_at, s.seen_at,
		s.sso_issuer, s.sso_subject, s.sso_checked_at, u.id, u.email, u.password_hash, u.notify_regressions, u.created_at, COALESCE(u.password_changed_at, u.created_at)
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, now).
		Scan(&s.TokenHash, &s.UserID, &s.CSRF, &s.CreatedAt, &s.ExpiresAt, &s.SeenAt,
			&s.SSOIssuer, &s.SSOSubject, &checked, &u.ID, &u.Email, &u.PasswordHash, &u.NotifyRegressions, &u.CreatedAt, &u.PasswordChangedAt)
	s.CreatedAt, s.ExpiresAt, s.SeenAt, u.CreatedAt, u.PasswordChangedAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC(), s.SeenAt.UTC(), u.CreatedAt.UTC(), u.PasswordChangedAt.UTC()
	if checked.Valid {
		s.SSOCheckedAt = checked.Time.UTC()
	}
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
	k, ok := p.apiKeys.get(keyHash, now) // found less than KeyCacheFor ago
	if !ok {
		// A key works while its maker is a member of its workspace: api_key_by_hash (migration
		// 026), a function so that its plan is kept (see budgetKeySQL).
		var err error
		if k, err = scanKey(p.db.QueryRowContext(ctx, apiKeyByHashSQL, keyHash)); err != nil {
			return store.APIKey{}, pgErr("api key", err)
		}
		p.apiKeys.put(keyHash, k.ID, k, now)
	}
	used, err := p.recordKeyUse(ctx, k.ID, k.LastUsedAt, now)
	if used != k.LastUsedAt {
		k.LastUsedAt = used
		p.apiKeys.update(keyHash, k)
	}
	return k, err
}

// apiKeyByHashSQL finds an unrevoked API key by hash ($1) whose maker is still a member of its
// workspace (migration 026).
const apiKeyByHashSQL = `SELECT * FROM api_key_by_hash($1)`

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
	res, err := p.db.ExecContext(ctx, keyUseSQL, keyID, now, now.Add(-store.KeyUseGranularity))
	if err != nil {
		return last, pgErr("record api key use", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return last, nil
	}
	used := now // a copy: &now would move now to the heap on every call, a write or not
	return &used, nil
}

func (p *Store) RevokeAPIKey(ctx context.Context, userID, keyID string, now time.Time) error {
	if !uuidOK(userID, keyID) {
		return store.NotFound("api key")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $3
		WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`, keyID, userID, store.Now(now))
	// This process refuses the key at once; the others within KeyCacheFor.
	p.apiKeys.forget(keyID)
	p.budgetKeys.forget(keyID)
	return pgErr("revoke api key", affected(res, err, sql.ErrNoRows))
}

// CreateAccountLink replaces the user's pending links of the purpose and drops their spent
// ones, so a user holds at most one live link of each kind.
func (p *Store) CreateAccountLink(ctx context.Context, l store.AccountLink) error {
	if !uuidOK(l.UserID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM account_links WHERE user_id = $1 AND (purpose = $2 OR used_at IS NOT NULL OR expires_at <= $3)`,
			l.UserID, l.Purpose, store.Now(l.CreatedAt)); err != nil {
			return pgErr("account link", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO account_links (token_hash, user_id, purpose, email, created_at, expires_at)
			SELECT $1, id, $3, $4, $5, $6 FROM users WHERE id = $2`,
			l.TokenHash, l.UserID, l.Purpose, store.CanonicalEmail(l.Email), store.Now(l.CreatedAt), store.Now(l.ExpiresAt))
		return pgErr("account link", affected(res, err, store.NotFound("user")))
	})
}

const linkCols = `token_hash, user_id, purpose, email, created_at, expires_at, used_at`

func scanLink(row rowScanner) (store.AccountLink, error) {
	var l store.AccountLink
	var used sql.NullTime
	err := row.Scan(&l.TokenHash, &l.UserID, &l.Purpose, &l.Email, &l.CreatedAt, &l.ExpiresAt, &used)
	l.CreatedAt, l.ExpiresAt, l.UsedAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC(), timePtr(used)
	return l, err
}

func (p *Store) AccountLink(ctx context.Context, tokenHash string, purpose store.LinkPurpose, now time.Time) (store.AccountLink, error) {
	l, err := scanLink(p.db.QueryRowContext(ctx, `SELECT `+linkCols+` FROM account_links WHERE token_hash = $1 AND purpose = $2`, tokenHash, purpose))
	if err != nil {
		return l, pgErr("account link", err)
	}
	if l.UsedAt != nil || !l.ExpiresAt.After(now) {
		return l, fmt.Errorf("account link used or expired: %w", store.ErrGone)
	}
	return l, nil
}

// takeLink marks a link of the purpose used, when it is unused and unexpired at now, with one
// conditional UPDATE: of concurrent uses one gets the row. ErrGone for a used or expired link,
// ErrNotFound for an unknown one.
func takeLink(ctx context.Context, tx *sql.Tx, tokenHash string, purpose store.LinkPurpose, now time.Time) (store.AccountLink, error) {
	l, err := scanLink(tx.QueryRowContext(ctx, `UPDATE account_links SET used_at = $3
		WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3 RETURNING `+linkCols, tokenHash, purpose, store.Now(now)))
	if !errors.Is(err, sql.ErrNoRows) {
		return l, pgErr("account link", err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM account_links WHERE token_hash = $1 AND purpose = $2)`, tokenHash, purpose).Scan(&exists); err != nil {
		return l, pgErr("account link", err)
	}
	if exists {
		return l, fmt.Errorf("account link used or expired: %w", store.ErrGone)
	}
	return l, store.NotFound("account link")
}

// setPassword replaces a user's password hash and deletes their sessions but keep and their
// pending links: the one rule ResetPassword and ChangePassword share.
func setPassword(ctx context.Context, tx *sql.Tx, userID, hash, keep string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = $2, password_changed_at = $3 WHERE id = $1`, userID, hash, store.Now(now))
	if err := affected(res, err, sql.ErrNoRows); err != nil {
		return pgErr("set password", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2`, userID, keep); err != nil {
		return pgErr("end sessions", err)
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM account_links WHERE user_id = $1 AND used_at IS NULL`, userID)
	return pgErr("drop account links", err)
}

func (p *Store) ResetPassword(ctx context.Context, tokenHash, passwordHash string, now time.Time) (store.User, error) {
	var u store.User
	err := p.tx(ctx, func(tx *sql.Tx) error {
		l, err := takeLink(ctx, tx, tokenHash, store.LinkReset, now)
		if err != nil {
			return err
		}
		if err := setPassword(ctx, tx, l.UserID, passwordHash, "", now); err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, l.UserID))
		return pgErr("user", err)
	})
	return u, err
}

func (p *Store) ChangePassword(ctx context.Context, userID, passwordHash, keepSession string, now time.Time) error {
	if !uuidOK(userID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error { return setPassword(ctx, tx, userID, passwordHash, keepSession, now) })
}

func (p *Store) ConfirmEmail(ctx context.Context, tokenHash string, now time.Time) (store.User, string, error) {
	var old store.User
	var email string
	err := p.tx(ctx, func(tx *sql.Tx) error {
		l, err := takeLink(ctx, tx, tokenHash, store.LinkEmail, now)
		if err != nil {
			return err
		}
		if old, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE id = $1 FOR UPDATE`, l.UserID)); err != nil {
			return pgErr("user", err)
		}
		// A unique violation (another account has the address) rolls the link's use back too.
		if _, err := tx.ExecContext(ctx, `UPDATE users SET email = $2 WHERE id = $1`, l.UserID, l.Email); err != nil {
			return pgErr("change e-mail", err)
		}
		email = l.Email
		_, err = tx.ExecContext(ctx, `DELETE FROM account_links WHERE user_id = $1 AND used_at IS NULL`, l.UserID)
		return pgErr("drop account links", err)
	})
	return old, email, err
}

func (p *Store) SessionsOf(ctx context.Context, userID string, now time.Time) ([]store.Session, error) {
	if !uuidOK(userID) {
		return []store.Session{}, nil
	}
	return queryAll(ctx, p.db, "sessions", func(r rowScanner) (s store.Session, err error) {
		err = r.Scan(&s.TokenHash, &s.UserID, &s.CreatedAt, &s.ExpiresAt, &s.SeenAt)
		s.CreatedAt, s.ExpiresAt, s.SeenAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC(), s.SeenAt.UTC()
		return s, err
	}, `SELECT token_hash, user_id, created_at, expires_at, seen_at FROM sessions
		WHERE user_id = $1 AND expires_at > $2 ORDER BY seen_at DESC, created_at DESC, token_hash`, userID, store.Now(now))
}

func (p *Store) EndSessions(ctx context.Context, userID, keepSession string) (int, error) {
	if !uuidOK(userID) {
		return 0, nil
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2`, userID, keepSession)
	if err != nil {
		return 0, pgErr("end sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), pgErr("end sessions", err)
}

// accountUse reads the user's workspaces with their other members and owners and sorts them
// by store.AccountUseOf. lock takes the rows of the user's workspaces (in id order, as
// lastOwner takes one), then the user's: the order every writer of memberships follows (an
// accept or a removal locks the workspace, then its insert or update reaches the user's row
// through a foreign key), so a concurrent role change, removal or accept waits for the deletion
// or it for them, without a deadlock, and the deletion sees the members the check saw.
func accountUse(ctx context.Context, q interface {
	querier
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, userID string, lock bool) (store.AccountUse, error) {
	forUpdate, forUpdateW := "", ""
	if lock {
		forUpdate, forUpdateW = " FOR UPDATE", " FOR UPDATE OF w"
	}
	var ws []store.Workspace
	var others, owners []int
	_, err := queryAll(ctx, q, "workspaces", func(r rowScanner) (struct{}, error) {
		var w store.Workspace
		var o, oo int
		err := r.Scan(&w.ID, &w.Name, &w.CreatedAt, &w.RetentionDays, &w.Role, &o, &oo)
		w.CreatedAt = w.CreatedAt.UTC()
		ws, others, owners = append(ws, w), append(others, o), append(owners, oo)
		return struct{}{}, err
	}, `WITH mine AS (SELECT w.id, w.name, w.created_at, w.retention_days, m.role
			FROM workspaces w JOIN memberships m ON m.workspace_id = w.id
			WHERE m.user_id = $1 ORDER BY w.id`+forUpdateW+`)
		SELECT mine.*,
			(SELECT count(*) FROM memberships o WHERE o.workspace_id = mine.id AND o.user_id <> $1),
			(SELECT count(*) FROM memberships o WHERE o.workspace_id = mine.id AND o.user_id <> $1 AND o.role = 'owner')
		FROM mine ORDER BY mine.id <> $1, lower(mine.name), mine.id`, userID)
	if err != nil {
		return store.AccountUse{}, err
	}
	var one int
	if err := q.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = $1`+forUpdate, userID).Scan(&one); err != nil {
		return store.AccountUse{}, pgErr("user", err)
	}
	return store.AccountUseOf(userID, ws, others, owners), nil
}

func (p *Store) AccountUse(ctx context.Context, userID string) (store.AccountUse, error) {
	if !uuidOK(userID) {
		return store.AccountUse{}, store.NotFound("user")
	}
	return accountUse(ctx, p.db, userID, false)
}

func (p *Store) DeleteAccount(ctx context.Context, userID string) ([]string, error) {
	defer p.forgetKeys()
	if !uuidOK(userID) {
		return nil, store.NotFound("user")
	}
	var deleted []string
	err := p.tx(ctx, func(tx *sql.Tx) error {
		use, err := accountUse(ctx, tx, userID, true)
		if err != nil {
			return err
		}
		if len(use.InUse) > 0 {
			return &store.AccountInUseError{Workspaces: use.InUse}
		}
		for _, w := range use.Deleted {
			// Sites (their scans, results, jobs), keys, reports, invitations, memberships,
			// channels and the platform connection go with it (ON DELETE CASCADE).
			if _, err := tx.ExecContext(ctx, `DELETE FROM workspaces WHERE id = $1`, w.ID); err != nil {
				return pgErr("delete workspace", err)
			}
			deleted = append(deleted, w.ID)
		}
		// What they made in the workspaces others use stays there, with its oldest other owner.
		rest, err := queryAll(ctx, tx, "memberships", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) },
			`SELECT workspace_id FROM memberships WHERE user_id = $1`, userID)
		if err != nil {
			return err
		}
		for _, id := range rest {
			if err := handOver(ctx, tx, id, userID); err != nil {
				return err
			}
		}
		// Sessions, keys, OAuth grants, memberships, links, pending connects and invitations
		// they made go with the user (ON DELETE CASCADE); the security log keeps its lines.
		res, err := tx.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, userID)
		return pgErr("delete user", affected(res, err, sql.ErrNoRows))
	})
	return deleted, err
}
