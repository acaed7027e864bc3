package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The adapter watches the JSON-RPC messages of a connection for what the
// SDK does not expose: the ID it gave a tools/call request (for the span's
// jsonrpc.request.id), the progress notifications read for a call before
// its response (so that the call publishes them all before it returns),
// the log messages read during a call, and the raw tools/list results (the
// SDK's Tool drops execution.taskSupport).
//
// It watches in one of two places. A connection of the SDK's streamable
// HTTP transport is not wrapped: the SDK finds unexported methods on it (it
// learns the initialize result that way, which sends Mcp-Protocol-Version
// and opens the standalone stream), and a wrapper would hide them. The
// adapter watches its HTTP requests instead, with a RoundTripper that sees
// each POST body (a request's context is the call's) and the response
// streams of its calls and of the standalone GET. Other
// transports (stdio, in-memory, SDKTransport's) are wrapped at the
// Connection, whose Write gets the call's context too.

const (
	methodToolsList         = "tools/list"
	methodProgress          = "notifications/progress"
	methodLog               = "notifications/message"
	maxLogQueue             = 4096
	progressDrainTimeout    = time.Second
	maxWatchedMessageLength = 16 << 20
)

// callInfoKey carries a *callInfo in the context of one tools/call.
type callInfoKey struct{}

// callInfo is one running tools/call.
type callInfo struct {
	token string          // the call's progress token
	ctx   context.Context // the tool call's context (harness.Update, elicitations)
	timer *callTimer      // set before the request is sent

	mu      sync.Mutex
	id      string        // the JSON-RPC ID of the request (the last one, if resent)
	arrived int           // progress notifications read off the connection
	handled int           // progress notifications handled
	drained chan struct{} // closed when handled reaches arrived, while the call waits
}

func (c *callInfo) setID(id string) {
	c.mu.Lock()
	c.id = id
	c.mu.Unlock()
}

func (c *callInfo) getID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// noteArrived counts a notification of the call (progress, or a log
// message) read off the connection.
func (c *callInfo) noteArrived() {
	c.mu.Lock()
	c.arrived++
	c.mu.Unlock()
}

// noteHandled counts a notification of the call that was handled.
func (c *callInfo) noteHandled() {
	c.mu.Lock()
	c.handled++
	if c.handled >= c.arrived && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

// waitNotes waits, at most d, until the notifications of the call read
// before its response (progress, log messages) have been handled: the SDK
// delivers a response as soon as it reads it, and queues the
// notifications that came before it, so the last update would otherwise
// be handled after the call ended, and lost.
func (c *callInfo) waitNotes(ctx context.Context, d time.Duration) {
	c.mu.Lock()
	if c.handled >= c.arrived {
		c.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	c.drained = ch
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// sent sees a message the client writes, with the context it is written
// with.
func (s *server) sent(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	switch req.Method {
	case methodToolsCall:
		if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
			info.setID(fmt.Sprint(req.ID.Raw()))
		}
	case methodToolsList:
		s.wmu.Lock()
		if s.pendingLists == nil {
			s.pendingLists = map[string]bool{}
		}
		s.pendingLists[fmt.Sprint(req.ID.Raw())] = true
		s.wmu.Unlock()
	}
}

// received sees a message the client read.
func (s *server) received(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		switch m.Method {
		case methodProgress:
			var p struct {
				Token any `json:"progressToken"`
			}
			if json.Unmarshal(m.Params, &p) != nil {
				return
			}
			token, _ := p.Token.(string)
			if info := s.callByToken(token); info != nil {
				info.noteArrived()
			}
		case methodLog:
			// A log message belongs to the server's only running call;
			// logMessage, which handles the messages in the order they
			// were read, takes the call from the queue.
			info, n := s.runningCall()
			if n != 1 {
				info = nil
			}
			s.wmu.Lock()
			if len(s.logQueue) >= maxLogQueue {
				s.logQueue = s.logQueue[:0] // out of step: start again
			}
			s.logQueue = append(s.logQueue, info)
			s.wmu.Unlock()
			if info != nil {
				info.noteArrived()
			}
		}
	case *jsonrpc.Response:
		s.wmu.Lock()
		if len(s.pendingLists) == 0 {
			s.wmu.Unlock()
			return
		}
		id := fmt.Sprint(m.ID.Raw())
		pending := s.pendingLists[id]
		delete(s.pendingLists, id)
		s.wmu.Unlock()
		if pending && m.Error == nil {
			s.sawToolsList(m.Result)
		}
	}
}

// sawToolsList records the tools of a raw tools/list result that require
// task augmentation ("execution": {"taskSupport": "required"}).
func (s *server) sawToolsList(raw json.RawMessage) {
	var res struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, t := range res.Tools {
		if t.Execution != nil && t.Execution.TaskSupport == "required" {
			if s.taskRequired == nil {
				s.taskRequired = map[string]bool{}
			}
			s.taskRequired[t.Name] = true
		}
	}
}

// watch returns t, watched.
func (s *server) watch(t sdk.Transport) sdk.Transport {
	if st, ok := t.(*sdk.StreamableClientTransport); ok {
		c := *st
		hc := http.DefaultClient
		if st.HTTPClient != nil {
			hc = st.HTTPClient
		}
		tapped := *hc
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		tapped.Transport = &httpTap{base: base, s: s}
		c.HTTPClient = &tapped
		return &c
	}
	return watchedTransport{t, s}
}

// watchedTransport wraps a transport whose connection can be wrapped.
type watchedTransport struct {
	sdk.Transport
	s *server
}

func (t watchedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return watchedConn{c, t.s}, nil
}

type watchedConn struct {
	sdk.Connection
	s *server
}

func (c watchedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.s.received(msg)
	}
	return msg, err
}

func (c watchedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.s.sent(ctx, msg)
	return c.Connection.Write(ctx, msg)
}

// httpTap watches the HTTP requests of a streamable HTTP connection.
type httpTap struct {
	base http.RoundTripper
	s    *server
}

func (t *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	watchResponse := req.Method == http.MethodGet // the standalone stream
	if req.Method == http.MethodPost && req.GetBody != nil && req.ContentLength > 0 && req.ContentLength <= maxWatchedMessageLength {
		if body, err := req.GetBody(); err == nil {
			data, err := io.ReadAll(body)
			body.Close()
			if err == nil {
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					t.s.sent(req.Context(), msg)
					// The response to a call may be a stream of messages.
					r, ok := msg.(*jsonrpc.Request)
					watchResponse = ok && r.IsCall()
				}
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || !watchResponse || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		resp.Body = &eventTap{ReadCloser: resp.Body, s: t.s}
	case "application/json":
		resp.Body = &jsonTap{ReadCloser: resp.Body, s: t.s}
	}
	return resp, nil
}

// jsonTap reads the JSON-RPC message of a JSON response as the SDK reads
// it.
type jsonTap struct {
	io.ReadCloser
	s    *server
	buf  bytes.Buffer
	done bool
}

func (j *jsonTap) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	if !j.done {
		if j.buf.Len()+n > maxWatchedMessageLength {
			j.done = true
			j.buf = bytes.Buffer{}
		} else {
			j.buf.Write(p[:n])
		}
		if err == io.EOF {
			j.done = true
			if msg, derr := jsonrpc.DecodeMessage(j.buf.Bytes()); derr == nil {
				j.s.received(msg)
			}
			j.buf = bytes.Buffer{}
		}
	}
	return n, err
}

// eventTap reads the JSON-RPC messages of a server-sent event stream as
// the SDK reads them: the data lines of each event, decoded when they may
// concern the adapter (a progress notification, a tools/list result).
type eventTap struct {
	io.ReadCloser
	s       *server
	line    []byte // the current line, incomplete
	data    []byte // the current event's data
	tooLong bool   // the current event is too long to watch
}

func (e *eventTap) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	e.feed(p[:n])
	return n, err
}

func (e *eventTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			e.appendLine(b)
			return
		}
		e.appendLine(b[:i])
		e.endLine()
		b = b[i+1:]
	}
}

func (e *eventTap) appendLine(b []byte) {
	if len(e.line)+len(b) > maxWatchedMessageLength {
		e.tooLong = true
		e.line = e.line[:0]
		return
	}
	e.line = append(e.line, b...)
}

func (e *eventTap) endLine() {
	line := bytes.TrimSuffix(e.line, []byte("\r"))
	switch {
	case len(line) == 0:
		e.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		if len(e.data)+len(v) > maxWatchedMessageLength {
			e.tooLong = true
		} else if !e.tooLong {
			e.data = append(e.data, v...)
		}
	}
	e.line = e.line[:0]
}

func (e *eventTap) dispatch() {
	data := e.data
	e.data = e.data[:0]
	if e.tooLong {
		e.tooLong = false
		return
	}
	if len(data) == 0 || !(bytes.Contains(data, []byte(methodProgress)) || bytes.Contains(data, []byte(methodLog)) || e.s.listsPending()) {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		e.s.received(msg)
	}
}

// logCall takes the call that the next log message to handle belongs to,
// as received attributed it: nil for none, and ok false when the message
// was not seen.
func (s *server) logCall() (info *callInfo, ok bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(s.logQueue) == 0 {
		return nil, false
	}
	info = s.logQueue[0]
	s.logQueue[0] = nil
	s.logQueue = s.logQueue[1:]
	if len(s.logQueue) == 0 {
		s.logQueue = nil
	}
	return info, true
}

func (s *server) listsPending() bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return len(s.pendingLists) > 0
}
