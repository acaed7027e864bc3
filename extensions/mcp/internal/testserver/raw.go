package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Raw wraps the server's side of connections: its tools/list results end
// with the Extra tools (raw JSON, as no SDK server would send them), the
// results of its responses have each Replace[i][0] replaced by
// Replace[i][1] (to send what no SDK server would, such as malformed
// base64), and each connection is sent on Conns, if not nil, so that a
// test can write messages of its own to the client.
type Raw struct {
	Extra   []json.RawMessage
	Replace [][2]string
	Conns   chan mcp.Connection

	mu   sync.Mutex
	last mcp.Connection
}

// Flood writes n notifications/tools/list_changed to the client of the
// last connection.
func (r *Raw) Flood(ctx context.Context, n int) error {
	r.mu.Lock()
	c := r.last
	r.mu.Unlock()
	if c == nil {
		return errors.New("no connection")
	}
	for range n {
		if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}); err != nil {
			return err
		}
	}
	return nil
}

// Wrap returns t, wrapped.
func (r *Raw) Wrap(t mcp.Transport) mcp.Transport { return rawTransport{t, r} }

type rawTransport struct {
	mcp.Transport
	r *Raw
}

func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	rc := rawConn{c, t.r}
	t.r.mu.Lock()
	t.r.last = rc
	t.r.mu.Unlock()
	if t.r.Conns != nil {
		t.r.Conns <- rc
	}
	return rc, nil
}

type rawConn struct {
	mcp.Connection
	r *Raw
}

func (c rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		if res, ok := c.r.result(resp.Result); ok {
			msg = &jsonrpc.Response{ID: resp.ID, Result: res}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Message returns the JSON-RPC message data with the extra tools when it
// is a tools/list result, and data otherwise.
func (r *Raw) Message(data []byte) []byte {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return data
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return data
	}
	res, ok := r.result(resp.Result)
	if !ok {
		return data
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID, Result: res})
	if err != nil {
		return data
	}
	return out
}

func (r *Raw) result(raw json.RawMessage) (json.RawMessage, bool) {
	if len(r.Replace) > 0 {
		out := string(raw)
		for _, rep := range r.Replace {
			out = strings.ReplaceAll(out, rep[0], rep[1])
		}
		if out != string(raw) {
			return json.RawMessage(out), true
		}
	}
	if len(r.Extra) == 0 {
		return nil, false
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil || res["tools"] == nil {
		return nil, false
	}
	var tools []json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return nil, false
	}
	res["tools"], _ = json.Marshal(append(tools, r.Extra...))
	b, err := json.Marshal(res)
	return b, err == nil
}
