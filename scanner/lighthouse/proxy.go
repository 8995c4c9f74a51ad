package lighthouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"sitepulse/scanner/netguard"
)

// ChromeProxy is the forward proxy every request of a Lighthouse run's Chrome goes through:
// the page, its redirects, subresources, iframes, fetch/XHR and WebSockets. Chrome loads a
// tenant's page, which may point anywhere, so the allow-list is enforced where connections are
// made (OWASP SSRF prevention: at the network layer, not by parsing URLs): the proxy dials with
// the outbound guard, and a refused connection is answered 403 (502 for other failures), a
// failed subresource for Chrome, never a fetch. Chrome follows redirects itself, so each hop
// comes back here and is checked again. It listens on loopback; started per run.
type ChromeProxy struct {
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	log     *slog.Logger
	ln      net.Listener
	srv     *http.Server
	rp      *httputil.ReverseProxy
	ctx     context.Context // ends tunnels at Close
	cancel  context.CancelFunc
	tunnels sync.WaitGroup
	refused atomic.Int64
}

// StartChromeProxy listens on 127.0.0.1 on a free port and serves until Close; dial makes
// every connection (Guard.DialContext). A nil log discards.
func StartChromeProxy(dial func(ctx context.Context, network, address string) (net.Conn, error), log *slog.Logger) (*ChromeProxy, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("Chrome's proxy: %w", err)
	}
	p := &ChromeProxy{dial: dial, log: log, ln: ln}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL // absolute-form: the request names its destination
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{
			Proxy: nil, DialContext: dial, TLSHandshakeTimeout: 10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second, MaxIdleConns: 20, IdleConnTimeout: 30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.fail(w, r.URL.Host, err) },
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: p.rp.ErrorLog}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's address for Chrome's --proxy-server.
func (p *ChromeProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Refused is how many connections the guard refused, for the run's log line.
func (p *ChromeProxy) Refused() int { return int(p.refused.Load()) }

// Close stops the proxy and ends its tunnels.
func (p *ChromeProxy) Close() error {
	p.cancel()
	err := p.srv.Close()
	p.tunnels.Wait()
	return err
}

func (p *ChromeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.Scheme == "http" && r.URL.Host != "":
		p.rp.ServeHTTP(w, r)
	default:
		http.Error(w, "this is a forward proxy: send CONNECT or an absolute http:// URL", http.StatusBadRequest)
	}
}

// fail answers a request whose connection could not be made: 403 when the guard refused it.
func (p *ChromeProxy) fail(w http.ResponseWriter, host string, err error) {
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		p.refused.Add(1)
		p.log.Info("chrome proxy: refused", "host", host, "reason", blocked.Reason)
		http.Error(w, blocked.Error(), http.StatusForbidden)
		return
	}
	p.log.Debug("chrome proxy: connection failed", "host", host, "err", err)
	http.Error(w, "the proxy could not connect", http.StatusBadGateway)
}

// tunnel answers CONNECT host:port (https, wss) with a byte pipe to an address the guard allows.
func (p *ChromeProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	dst, err := p.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(w, r.Host, err)
		return
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		dst.Close()
		return
	}
	src, buf, err := rc.Hijack()
	if err != nil {
		dst.Close()
		return
	}
	p.tunnels.Add(1)
	go func() {
		defer p.tunnels.Done()
		done := make(chan struct{}, 2)
		go func() { io.Copy(dst, buf); done <- struct{}{} }() // buf holds what Chrome sent early
		go func() { io.Copy(src, dst); done <- struct{}{} }()
		select {
		case <-done:
		case <-p.ctx.Done():
		}
		src.Close()
		dst.Close()
		<-done
	}()
}
