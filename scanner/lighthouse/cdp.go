package lighthouse

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// cdpClient speaks the Chrome DevTools Protocol over one WebSocket to the browser target: calls
// answered by id, and events handed, in order, to one handler on a goroutine of their own (so
// a handler may call back). Messages are never logged: some carry a site's credentials.
type cdpClient struct {
	ws      *wsConn
	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan cdpMessage
	err     error // why the connection ended
	done    chan struct{}
	// Events wait in an unbounded queue: a handler blocked in a Call must never stop the
	// reader that brings that call's answer.
	qmu     sync.Mutex
	queue   []cdpMessage
	wake    chan struct{}
	handled chan struct{} // closed when the event handler returned
}

// cdpMessage is an answer (ID set) or an event (Method set).
type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// dialCDP connects to a browser's DevTools WebSocket URL; onEvent (nil ignores events) receives
// every event until Close.
func dialCDP(ctx context.Context, wsURL string, onEvent func(method, sessionID string, params json.RawMessage)) (*cdpClient, error) {
	ws, err := dialWS(ctx, wsURL)
	if err != nil {
		return nil, err
	}
	c := &cdpClient{ws: ws, pending: map[int64]chan cdpMessage{}, done: make(chan struct{}), wake: make(chan struct{}, 1),
		handled: make(chan struct{})}
	go c.read()
	go c.handle(onEvent)
	return c, nil
}

// handle hands the queued events to onEvent in order until the connection ended and the queue
// is empty.
func (c *cdpClient) handle(onEvent func(method, sessionID string, params json.RawMessage)) {
	defer close(c.handled)
	for {
		c.qmu.Lock()
		batch := c.queue
		c.queue = nil
		c.qmu.Unlock()
		for _, m := range batch {
			if onEvent != nil {
				onEvent(m.Method, m.SessionID, m.Params)
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-c.done:
			c.qmu.Lock()
			empty := len(c.queue) == 0
			c.qmu.Unlock()
			if empty {
				return
			}
		}
	}
}

// read dispatches answers to their callers and events to the handler, until the socket ends.
func (c *cdpClient) read() {
	var err error
	defer func() {
		c.mu.Lock()
		c.err = err
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
		close(c.done)
	}()
	for {
		var raw []byte
		if raw, err = c.ws.ReadMessage(); err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if m.Method != "" {
			c.qmu.Lock()
			c.queue = append(c.queue, m)
			c.qmu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Call sends method with params (to the browser, or to an attached target's sessionID) and
// decodes the answer into result (nil ignores it). Its errors name the method, never the params.
func (c *cdpClient) Call(ctx context.Context, sessionID, method string, params, result any) error {
	body, err := json.Marshal(struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		SessionID string `json:"sessionId,omitempty"`
		Params    any    `json:"params,omitempty"`
	}{0, method, sessionID, params})
	if err != nil {
		return fmt.Errorf("DevTools %s: %w", method, err)
	}
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	if c.pending == nil || isClosed(c.done) {
		c.mu.Unlock()
		return fmt.Errorf("DevTools %s: the connection to Chrome ended", method)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	// The id is spliced in after marshalling so that the params are encoded once.
	body = append([]byte(fmt.Sprintf(`{"id":%d`, id)), body[len(`{"id":0`):]...)
	if err := c.ws.WriteText(body); err != nil {
		c.forget(id)
		return fmt.Errorf("DevTools %s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("DevTools %s: the connection to Chrome ended", method)
		}
		if m.Error != nil {
			return fmt.Errorf("DevTools %s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("DevTools %s: %w", method, context.Cause(ctx))
	}
}

func (c *cdpClient) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Close ends the connection; the event handler has returned when Close has, so a handler must
// not call it.
func (c *cdpClient) Close() error {
	err := c.ws.Close()
	<-c.done
	<-c.handled
	return err
}

// Done is closed when the connection ended.
func (c *cdpClient) Done() <-chan struct{} { return c.done }

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
