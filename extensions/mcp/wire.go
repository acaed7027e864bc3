package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
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
	methodListChanged       = "notifications/tools/list_changed"
	methodElicit            = "elicitation/create"
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

// sent sees a request the client writes, with the context it is written
// with: its method, and its ID ("" for a notification).
func (s *server) sent(ctx context.Context, method, id string) {
	if id == "" {
		return
	}
	switch method {
	case methodToolsCall:
		if info, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
			info.setID(id)
		}
	case methodToolsList:
		s.wmu.Lock()
		if s.pendingLists == nil {
			s.pendingLists = map[string]bool{}
		}
		s.pendingLists[id] = true
		s.wmu.Unlock()
	}
}

// idString is a JSON-RPC ID as spans and the adapter show it: 7, or abc
// for "abc".
func idString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// requestHead decodes the method and the ID of a JSON-RPC request, without
// the rest.
func requestHead(data []byte) (method, id string, ok bool) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &head) != nil || head.Method == "" {
		return "", "", false
	}
	if len(head.ID) > 0 && head.ID[0] == '"' {
		var s string
		if json.Unmarshal(head.ID, &s) != nil {
			return "", "", false
		}
		return head.Method, s, true
	}
	if string(head.ID) == "null" {
		return head.Method, "", true
	}
	return head.Method, string(head.ID), true
}

// received sees a message the client read, and says whether the SDK gets
// it. A tools/list_changed notification is dropped while another one waits
// in the SDK's queue, unhandled: that one reloads the list (and clears the
// SDK's cache of it) after this one came, so a flood of them costs neither
// memory in the queue nor reloads.
func (s *server) received(msg jsonrpc.Message) (keep bool) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		switch m.Method {
		case methodListChanged:
			if s.framesWatched.Load() {
				return true // kept by keepListChanged
			}
			return !s.listChangedQueued.Swap(true)
		case methodProgress:
			var p struct {
				Token any `json:"progressToken"`
			}
			if json.Unmarshal(m.Params, &p) != nil {
				return true
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
			return true
		}
		id := idString(m.ID)
		pending := s.pendingLists[id]
		delete(s.pendingLists, id)
		s.wmu.Unlock()
		if pending && m.Error == nil {
			s.sawToolsList(m.Result)
		}
	}
	return true
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
	if st, ok := t.(*stdioTransport); ok {
		st.s = s
		s.framesWatched.Store(true)
	}
	return watchedTransport{t, s}
}

// keepListChanged reports whether the SDK gets the message data, when it
// is a tools/list_changed notification: not while another one waits,
// unhandled, in the SDK's queue (see received).
func (s *server) keepListChanged(data []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(data, &m) != nil || m.ID != nil || m.Method != methodListChanged {
		return true
	}
	return !s.listChangedQueued.Swap(true)
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
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil || c.s.received(msg) {
			return msg, err
		}
	}
}

func (c watchedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.s.sent(ctx, req.Method, idString(req.ID))
	}
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
				if method, id, ok := requestHead(data); ok && id != "" {
					t.s.sent(req.Context(), method, id)
					watchResponse = true // the response to a call may be a stream of messages
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
		call, _ := req.Context().Value(callInfoKey{}).(*callInfo)
		resp.Body = &eventTap{ReadCloser: resp.Body, s: t.s, call: call}
	case "application/json":
		resp.Body = &jsonTap{ReadCloser: resp.Body, s: t.s}
	}
	return resp, nil
}

// jsonTap reads the JSON-RPC message of a JSON response before the SDK
// does, watches it and filters it (filterFrame). A body longer than
// maxWatchedMessageLength passes as it is.
type jsonTap struct {
	io.ReadCloser
	s    *server
	out  []byte
	read bool
	err  error // after out
}

func (j *jsonTap) Read(p []byte) (int, error) {
	if !j.read {
		j.read = true
		data, err := io.ReadAll(io.LimitReader(j.ReadCloser, maxWatchedMessageLength+1))
		switch {
		case err != nil:
		case len(data) > maxWatchedMessageLength:
			// Too long to watch: the rest follows from the body.
		default:
			data = filterFrame(data)
			if j.s.listsPending() {
				if msg, derr := jsonrpc.DecodeMessage(data); derr == nil {
					j.s.received(msg) // a response: kept
				}
			}
			err = io.EOF
		}
		j.out, j.err = data, err
	}
	if len(j.out) == 0 {
		if j.err != nil {
			return 0, j.err
		}
		return j.ReadCloser.Read(p)
	}
	n := copy(p, j.out)
	j.out = j.out[n:]
	return n, nil
}

// eventTap reads a server-sent event stream before the SDK does, one event
// at a time: it watches the JSON-RPC message of each event's data and
// filters it (filterFrame), and gives the SDK the event, as it came or
// with its data rewritten.
type eventTap struct {
	io.ReadCloser
	s       *server
	call    *callInfo // the tools/call whose response this is, if it is one
	in      []byte    // read, not yet split into lines
	event   []byte    // the current event's lines other than data, as read
	data    []byte    // the current event's data
	out     []byte    // events ready for the SDK
	tooLong bool      // the current event is too long to watch: passed as it is
	err     error
}

func (e *eventTap) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			// The stream ended: what is left of an unfinished event goes
			// as it is.
			if len(e.event)+len(e.data)+len(e.in) > 0 {
				e.flushRaw()
				continue
			}
			return 0, e.err
		}
		n, err := e.ReadCloser.Read(p)
		e.feed(p[:n])
		e.err = err
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	if len(e.out) == 0 {
		e.out = e.out[:0:0]
	}
	return n, nil
}

func (e *eventTap) feed(b []byte) {
	e.in = append(e.in, b...)
	start := 0
	for {
		i := bytes.IndexByte(e.in[start:], '\n')
		if i < 0 {
			break
		}
		e.line(e.in[start : start+i+1])
		start += i + 1
	}
	// Keep the unfinished line at the start of the buffer.
	e.in = e.in[:copy(e.in, e.in[start:])]
	if len(e.in) > maxWatchedMessageLength {
		e.flushRaw()
	}
}

// line takes one line of the stream, with its newline.
func (e *eventTap) line(l []byte) {
	body := bytes.TrimRight(l, "\r\n")
	switch {
	case len(body) == 0:
		e.dispatch(l)
	case bytes.HasPrefix(body, []byte("data:")):
		v := bytes.TrimPrefix(body[len("data:"):], []byte(" "))
		if len(e.data)+len(v) > maxWatchedMessageLength {
			e.tooLong = true
		}
		if len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, v...)
	default:
		e.event = append(e.event, l...)
	}
}

// dispatch ends the current event at its blank line end.
func (e *eventTap) dispatch(end []byte) {
	data, keep := e.data, true
	if len(data) > 0 && !e.tooLong {
		data = filterFrame(data)
		if e.call != nil && (bytes.Contains(data, []byte(methodElicit)) || bytes.Contains(data, []byte(methodCreateMessage))) {
			data = markCall(data, e.call.token)
		}
		if bytes.Contains(data, []byte(methodProgress)) || bytes.Contains(data, []byte(methodLog)) ||
			bytes.Contains(data, []byte(methodListChanged)) || e.s.listsPending() {
			if msg, err := jsonrpc.DecodeMessage(data); err == nil {
				keep = e.s.received(msg)
			}
		}
	}
	// A dropped message leaves its event without data (the SDK skips
	// it), and its ID, for resuming the stream.
	e.out = append(e.out, e.event...)
	if len(e.data) > 0 && keep {
		for _, l := range bytes.Split(data, []byte("\n")) {
			e.out = append(e.out, "data: "...)
			e.out = append(e.out, l...)
			e.out = append(e.out, '\n')
		}
	}
	e.out = append(e.out, end...)
	e.event, e.data, e.tooLong = e.event[:0], e.data[:0], false
}

// flushRaw passes what was read of the current event as it is.
func (e *eventTap) flushRaw() {
	e.out = append(e.out, e.event...)
	if len(e.data) > 0 {
		e.out = append(e.out, "data: "...)
		e.out = append(e.out, bytes.ReplaceAll(e.data, []byte("\n"), []byte("\ndata: "))...)
		e.out = append(e.out, '\n')
	}
	e.out = append(e.out, e.in...)
	e.event, e.data, e.in, e.tooLong = e.event[:0], e.data[:0], e.in[:0], false
}

// metaCall is the _meta key under which the HTTP tap marks an
// elicitation/create or sampling/createMessage request that came on the
// response stream of a call with the call's progress token, so that
// elicit and createMessage know the call it belongs to even when several
// run.
const metaCall = "io.harnessx/call"

// markCall returns the message data with metaCall set to token in its
// params' _meta, when it is an elicitation/create or sampling/createMessage
// request.
func markCall(data []byte, token string) []byte {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return data
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || (req.Method != methodElicit && req.Method != methodCreateMessage) {
		return data
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil {
		return data
	}
	var meta map[string]any
	if raw := params["_meta"]; raw != nil && json.Unmarshal(raw, &meta) != nil {
		return data
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaCall] = token
	var err1, err2 error
	params["_meta"], err1 = json.Marshal(meta)
	req.Params, err2 = json.Marshal(params)
	if err1 != nil || err2 != nil {
		return data
	}
	out, err := jsonrpc.EncodeMessage(req)
	if err != nil {
		return data
	}
	return out
}

// sdkMaxDepth is how deep the SDK lets a JSON-RPC message nest: it refuses
// a deeper message whole.
const sdkMaxDepth = 1000

// refusedKey marks an input schema that filterFrame replaced; its value
// says why.
const refusedKey = "x-harnessx-refused"

// filterFrame returns the JSON-RPC message frame, or, when it nests deeper
// than the SDK accepts and it is a tools/list result, the same message
// with the schemas that nest too deep replaced by a mark that buildTools
// turns into the reason their tools are skipped: one tool with a schema
// nested thousands of levels deep must not fail the whole list.
func filterFrame(frame []byte) []byte {
	if jsonDepth(frame, sdkMaxDepth-1) < sdkMaxDepth-1 {
		return frame
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(frame, &msg) != nil || msg["result"] == nil {
		return frame
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(msg["result"], &res) != nil || res["tools"] == nil {
		return frame
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return frame
	}
	mark, _ := json.Marshal(map[string]string{refusedKey: fmt.Sprintf("it nests more than %d levels", maxSchemaDepth)})
	for _, t := range tools {
		for k, v := range t {
			if jsonDepth(v, maxSchemaDepth) > maxSchemaDepth {
				if k == "inputSchema" {
					t[k] = mark
				} else {
					delete(t, k)
				}
			}
		}
	}
	var err error
	if res["tools"], err = json.Marshal(tools); err != nil {
		return frame
	}
	if msg["result"], err = json.Marshal(res); err != nil {
		return frame
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return frame
	}
	return out
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
