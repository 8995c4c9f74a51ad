package lighthouse

import (
	"context"
	"encoding/json"
)

// DevTools is a Chrome DevTools Protocol connection to a browser: the client the signed-in
// audits use, for what else drives a real Chromium (the beacon's real-browser test).
type DevTools struct{ c *cdpClient }

// DialDevTools connects to a browser's DevTools WebSocket URL (on loopback); onEvent (nil
// ignores them) receives its events in order.
func DialDevTools(ctx context.Context, wsURL string, onEvent func(method, sessionID string, params json.RawMessage)) (*DevTools, error) {
	c, err := dialCDP(ctx, wsURL, onEvent)
	if err != nil {
		return nil, err
	}
	return &DevTools{c}, nil
}

// Call sends method with params to the browser, or to an attached target's sessionID, and
// decodes the answer into result (nil ignores it).
func (d *DevTools) Call(ctx context.Context, sessionID, method string, params, result any) error {
	return d.c.Call(ctx, sessionID, method, params, result)
}

// Close ends the connection.
func (d *DevTools) Close() error { return d.c.Close() }
