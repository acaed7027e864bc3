package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// An event stream passes through the tap unchanged, however it is cut
// into reads, and the tap sees its messages.
func TestEventTapPassesTheStream(t *testing.T) {
	stream := "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t1\",\"progress\":1}}\n\n" +
		": a comment\r\n\r\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\n" + "data: \"result\":{}}\n\n" +
		"retry: 100\n\n" +
		"data: {\"unfinished\":"
	for _, r := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"bytes", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := &server{}
			info := &callInfo{token: "t1"}
			s.inflight = map[string]*callInfo{"t1": info}
			tap := &eventTap{ReadCloser: io.NopCloser(r.wrap(strings.NewReader(stream))), s: s}
			got, err := io.ReadAll(tap)
			if err != nil {
				t.Fatal(err)
			}
			// Data lines are written back as "data: …" (a space after the
			// colon), the rest as it came.
			if string(got) != stream {
				t.Errorf("the tap changed the stream:\n%q\nwant\n%q", got, stream)
			}
			if info.arrived != 1 {
				t.Errorf("the tap saw %d progress notifications, want 1", info.arrived)
			}
		})
	}
}

// A tools/list result nested deeper than the SDK reads comes out of the
// tap with the deep schema replaced by a mark, the other tools as they
// were.
func TestEventTapRewritesDeepSchemas(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 600) + `{}` + strings.Repeat(`}}`, 600)
	msg := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object"}},{"name":"deep","inputSchema":` + deep + `}]}}`
	tap := &eventTap{ReadCloser: io.NopCloser(iotest.HalfReader(strings.NewReader("data: " + msg + "\n\n"))), s: &server{}}
	got, err := io.ReadAll(tap)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := bytes.CutPrefix(bytes.TrimSpace(got), []byte("data: "))
	if !ok {
		t.Fatalf("not an event: %.200q", got)
	}
	var m struct {
		Result struct {
			Tools []struct {
				Name        string         `json:"name"`
				InputSchema map[string]any `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Result.Tools) != 2 || m.Result.Tools[0].InputSchema["type"] != "object" ||
		m.Result.Tools[1].InputSchema[refusedKey] != "it nests more than 64 levels" {
		t.Errorf("tools %+v", m.Result.Tools)
	}
	if _, err := checkSchema(m.Result.Tools[1].InputSchema); err == nil {
		t.Errorf("the mark passes checkSchema")
	}
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(16)
	io.WriteString(tb, "one\ntwo\n")
	if got := tb.String(); got != "one\ntwo\n" {
		t.Errorf("%q", got)
	}
	io.WriteString(tb, "three\nfour\nfive\n")
	// The last 16 bytes are "ee\nfour\nfive\n"... from the start of a line.
	if got := tb.String(); got != "four\nfive\n" {
		t.Errorf("%q", got)
	}
	io.WriteString(tb, strings.Repeat("x", 40)+"\nend\n")
	if got, cut := tb.last(8); got != "end\n" || !cut || tb.written() != 8+16+45 {
		t.Errorf("%q %v %d", got, cut, tb.written())
	}
}

func TestJSONDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{}`, 1}, {`{"a":[1,{"b":2}]}`, 3}, {`"{[{["`, 0}, {`{"a":"\"{"}`, 1}, {`[[[[`, 4},
	} {
		if got := jsonDepth([]byte(c.in), 10); got != c.want {
			t.Errorf("jsonDepth(%s) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := jsonDepth([]byte(strings.Repeat("[", 100)), 10); got != 11 {
		t.Errorf("capped depth %d, want 11", got)
	}
}

// A JSON response passes through its tap unchanged, a long one too.
func TestJSONTapPassesTheBody(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxWatchedMessageLength) + `"}]}}`,
	} {
		tap := &jsonTap{ReadCloser: io.NopCloser(iotest.HalfReader(strings.NewReader(body))), s: &server{}}
		got, err := io.ReadAll(tap)
		if err != nil || string(got) != body {
			t.Errorf("%d bytes in, %d out, %v", len(body), len(got), err)
		}
	}
}

// However many tools/list_changed notifications come, and however fast,
// one reload goroutine runs at a time.
func TestListChangedCoalesces(t *testing.T) {
	e := &Extension{}
	e.bg, e.stop = context.WithCancel(context.Background())
	defer e.stop()
	s := &server{ext: e, name: "srv"} // not connected: a reload does nothing
	base := runtime.NumGoroutine()
	var most atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25_000 {
				s.listChanged()
				if n := int64(runtime.NumGoroutine()); n > most.Load() {
					most.Store(n)
				}
			}
		})
	}
	wg.Wait()
	e.stop()
	e.wg.Wait()
	if extra := most.Load() - int64(base) - 4; extra > 1 {
		t.Errorf("%d goroutines besides the callers during 100,000 notifications, want at most 1", extra)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reloading {
		t.Errorf("a reload is still marked running")
	}
}
