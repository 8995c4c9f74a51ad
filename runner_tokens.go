package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"sitepulse/store"
)

// runnerTokenCommand is `sitepulse runner-token`, the operator's runner tokens (docs/runners.md):
// tokens of no workspace, whose runners serve every workspace. It works on DATABASE_URL's
// database: create NAME prints a new token once, list shows the live ones, revoke ID revokes
// one (its runners stop at their next call).
func runnerTokenCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	usage := errors.New("usage: sitepulse runner-token create NAME | list | revoke ID (with DATABASE_URL set)")
	if len(args) == 0 {
		return usage
	}
	cfg, err := loadConfig(nil, getenv, stdout)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("sitepulse runner-token needs DATABASE_URL: the in-memory store lives only as long as one process")
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	switch {
	case args[0] == "create" && len(args) == 2 && strings.TrimSpace(args[1]) != "" && len(args[1]) <= 64:
		secret, hash := store.NewSecret("rnr_")
		t := store.RunnerToken{ID: store.NewID(), Name: strings.TrimSpace(args[1]), TokenHash: hash, Prefix: secret[:12], CreatedAt: now}
		if err := st.CreateRunnerToken(ctx, t); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "operator runner token %s (%s), shown this once; its runners serve every workspace:\n%s\n", t.ID, t.Name, secret)
		return nil
	case args[0] == "list" && len(args) == 1:
		tokens, err := st.RunnerTokens(ctx, "")
		if err != nil {
			return err
		}
		for _, t := range tokens {
			fmt.Fprintf(stdout, "%s  %s…  %s  %s\n", t.ID, t.Prefix, t.CreatedAt.Format(time.RFC3339), t.Name)
		}
		return nil
	case args[0] == "revoke" && len(args) == 2:
		if err := st.RevokeRunnerToken(ctx, "", store.CanonicalID(args[1]), now); err != nil {
			return fmt.Errorf("revoke %s: %w", args[1], err)
		}
		fmt.Fprintf(stdout, "revoked %s: its runners stop at their next call\n", args[1])
		return nil
	}
	return usage
}
