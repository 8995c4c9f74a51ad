// Command oidc-provider is a real OpenID provider for SitePulse's end-to-end single sign-on test:
// the zitadel/oidc example provider (its login page, its users test-user@127.0.0.1 and
// test-user2, password "verysecure"), bound to 127.0.0.1 only. It lives in a module of its own
// so that the product's go.mod never names it.
//
// Settings (environment): ADDR (127.0.0.1:port), CLIENT_ID, CLIENT_SECRET, REDIRECT_URI.
package main

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

func main() {
	addr := os.Getenv("ADDR")
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		slog.Error("ADDR must be 127.0.0.1:<port>", "addr", addr)
		os.Exit(2)
	}
	issuer := "http://" + addr + "/"
	storage.RegisterClients(storage.WebClient(os.Getenv("CLIENT_ID"), os.Getenv("CLIENT_SECRET"), strings.Split(os.Getenv("REDIRECT_URI"), ",")...))
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	router := exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), logger, false)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logger.Error("listen", "err", err)
		os.Exit(1)
	}
	// The test reads this line to know the provider is up.
	os.Stdout.WriteString("listening " + issuer + "\n")
	if err := http.Serve(ln, router); err != nil {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}
