package spill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// bigTool returns a tool named name that returns content (or fails with
// it, when fail is set).
func bigTool(name, content string, fail bool) *harness.Tool {
	return &harness.Tool{
		Name: name, Description: "returns a large result",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Concurrent:  true,
		Handler: func(context.Context, json.RawMessage) (string, error) {
			if fail {
				return "", errors.New(content)
			}
			return content, nil
		},
	}
}

// toolResults returns the tool results of a run's messages, in order.
func toolResults(msgs []harness.Message) []*harness.ToolResult {
	var out []*harness.ToolResult
	for _, m := range msgs {
		for _, p := range m.Content {
			if p.Type == harness.PartToolResult {
				out = append(out, p.ToolResult)
			}
		}
	}
	return out
}

// otherExt registers a tool from an extension, to show that spilling
// applies to tools however they are registered.
type otherExt struct{ content string }

func (o *otherExt) Name() string { return "other" }
func (o *otherExt) Install(ec *harness.ExtensionContext) error {
	_, err := ec.RegisterTool(bigTool("ext_dump", o.content, false))
	return err
}

func TestSpillMiddleware(t *testing.T) {
	small := strings.Repeat("s", 999)
	exact := strings.Repeat("e", 1000)
	over := textData(20) // > 1000 bytes
	cases := []struct {
		name    string
		tool    string
		spilled bool
		isErr   bool
	}{
		{"below threshold", "small", false, false},
		{"at threshold", "exact", false, false},
		{"over threshold", "over", true, false},
		{"error result over threshold", "failing", true, true},
		{"tool of another extension", "ext_dump", true, false},
		{"unknown tool error is small", "nope", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := New(WithThreshold(1000), WithTempParent(t.TempDir()))
			p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", c.tool, map[string]any{}), harnesstest.Reply("done"))
			a, err := harness.New(harness.WithProvider(p),
				harness.WithTools(bigTool("small", small, false), bigTool("exact", exact, false),
					bigTool("over", over, false), bigTool("failing", over, true)),
				harness.WithExtensions(ext, &otherExt{content: over}))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			res, err := a.Run(t.Context(), "go")
			if err != nil {
				t.Fatal(err)
			}
			r := toolResults(res.Messages)[0]
			if r.IsError != c.isErr {
				t.Errorf("IsError = %v, want %v", r.IsError, c.isErr)
			}
			got := strings.HasPrefix(r.Content, "[result spilled: ")
			if got != c.spilled {
				t.Fatalf("spilled = %v, want %v; content %.200q", got, c.spilled, r.Content)
			}
			if !c.spilled {
				if len(ext.Results()) != 0 {
					t.Errorf("results stored for an unspilled result: %v", ext.Results())
				}
				return
			}
			ms := ext.Results()
			if len(ms) != 1 || ms[0].Size != int64(len(over)) || ms[0].Tool != c.tool || ms[0].CallID != "c1" || ms[0].IsError != c.isErr {
				t.Fatalf("results = %+v", ms)
			}
			// Nothing is lost: the stored bytes are the original result.
			out, err := read(ext, map[string]any{"id": ms[0].ID, "op": "slice", "unit": "bytes", "limit": 100000})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(out, over) {
				t.Errorf("stored content differs from the original")
			}
		})
	}
}

// TestReadResultTool drives read_result through an agent: the scripted
// model reads the envelope's id and calls the tool, also with bad input.
func TestReadResultTool(t *testing.T) {
	data := csvData(5000)
	p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "export", map[string]any{}), harnesstest.Reply("ok"))
	a2 := newAgent(t, New(WithTempParent(t.TempDir())), p, bigTool("export", data, false))
	defer a2.Close(context.Background())
	res, err := a2.Run(t.Context(), "export")
	if err != nil {
		t.Fatal(err)
	}
	// The scripted model reads the id from the envelope.
	id := idRE.FindString(toolResults(res.Messages)[0].Content)
	if id == "" {
		t.Fatal("no id in the envelope")
	}
	p.Push(harnesstest.Response{ToolCalls: []harness.ToolCall{
		harnesstest.Call("r1", ToolName, map[string]any{"id": id, "op": "count", "where": where("country", "eq", "JP")}),
		harnesstest.Call("r2", ToolName, map[string]any{"id": id, "op": "search", "pattern": "("}),
		harnesstest.Call("r3", ToolName, map[string]any{"id": "../../etc/passwd", "op": "slice"}),
		harnesstest.Call("r4", ToolName, map[string]any{"id": id, "op": "count", "where": where("nope", "eq", 1)}),
	}}, harnesstest.Reply("done"))
	res, err = a2.Run(t.Context(), "count JP")
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res.Messages)
	want := []struct {
		isErr    bool
		contains string
	}{
		{false, "count: 1000 of 5000 rows where country eq \"JP\""},
		{true, "invalid regular expression"},
		{true, "not a result id"},
		{true, "unknown column"},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d results", len(rs))
	}
	for i, w := range want {
		if rs[i].IsError != w.isErr || !strings.Contains(rs[i].Content, w.contains) {
			t.Errorf("result %d = %v %q; want error=%v containing %q", i, rs[i].IsError, rs[i].Content, w.isErr, w.contains)
		}
	}
}

func newAgent(t *testing.T, ext *Extension, p harness.Provider, tools ...*harness.Tool) *harness.Agent {
	t.Helper()
	a, err := harness.New(harness.WithProvider(p), harness.WithTools(tools...), harness.WithExtensions(ext))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCleanupAtClose(t *testing.T) {
	parent := t.TempDir()
	ext := New(WithTempParent(parent))
	p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
	a := newAgent(t, ext, p, bigTool("dump", textData(2000), false))
	if ext.Dir() != "" {
		t.Fatal("the store exists before any spill")
	}
	if _, err := a.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	dir := ext.Dir()
	if !strings.HasPrefix(dir, parent) {
		t.Fatalf("store %q not under %q", dir, parent)
	}
	if n := len(ext.Results()); n != 1 {
		t.Fatalf("%d results", n)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary store %s still exists after Close (err %v)", dir, err)
	}
	if _, err := ext.Spill(context.Background(), "x", strings.NewReader("y")); !errors.Is(err, ErrClosed) {
		t.Errorf("Spill after Close: %v, want ErrClosed", err)
	}
	if inv := a.Inventory(); len(inv.Tools) != 1 || len(inv.Middleware) != 0 {
		t.Errorf("registrations left after Close: %+v", inv)
	}
}

func TestRetention(t *testing.T) {
	cases := []struct {
		name     string
		opts     func(dir string) []Option
		save     bool
		snapshot bool // save with harness.AsSnapshot, as the flight recorder does
		kept     bool
	}{
		{"temporary", func(string) []Option { return nil }, false, false, false},
		{"WithDir", func(d string) []Option { return []Option{WithDir(filepath.Join(d, "artifacts"))} }, false, false, true},
		{"WithStore", func(d string) []Option {
			s, _ := NewDirStore(filepath.Join(d, "store"))
			return []Option{WithStore(s)}
		}, false, false, true},
		{"WithRetain", func(string) []Option { return []Option{WithRetain(true)} }, false, false, true},
		{"saved in a session", func(string) []Option { return nil }, true, false, true},
		{"snapshot only", func(string) []Option { return nil }, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			ext := New(append([]Option{WithTempParent(d)}, c.opts(d)...)...)
			p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "dump", nil), harnesstest.Reply("ok"))
			a := newAgent(t, ext, p, bigTool("dump", textData(2000), false))
			if _, err := a.Run(t.Context(), "go"); err != nil {
				t.Fatal(err)
			}
			m := ext.Results()[0]
			arts, err := ext.Artifacts(t.Context())
			if err != nil || len(arts) != 1 {
				t.Fatalf("Artifacts = %v, %v", arts, err)
			}
			path := arts[0].Path
			if c.save {
				ctx := t.Context()
				if c.snapshot {
					ctx = harness.AsSnapshot(ctx)
				}
				if _, err := a.SaveSession(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if c.kept {
				if err != nil {
					t.Fatalf("result file gone after Close: %v", err)
				}
				if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m.SHA256 {
					t.Error("kept file does not match its SHA-256")
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("result file %s kept after Close (err %v)", path, err)
			}
		})
	}
}

// TestSessionRoundTrip saves a session on one agent, closes it, loads it
// into a new agent with a new extension and reads the result there.
func TestSessionRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		opts func(dir string) []Option // the same for both agents
	}{
		{"temporary store", func(string) []Option { return nil }},
		{"WithDir", func(d string) []Option { return []Option{WithDir(filepath.Join(d, "artifacts"))} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			data := csvData(4000)
			ext1 := New(append([]Option{WithTempParent(d)}, c.opts(d)...)...)
			p1 := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "export", nil), harnesstest.Reply("stored"))
			a1 := newAgent(t, ext1, p1, bigTool("export", data, false))
			if _, err := a1.Run(t.Context(), "export"); err != nil {
				t.Fatal(err)
			}
			m := ext1.Results()[0]
			saved, err := a1.SaveSession(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := a1.Close(context.Background()); err != nil {
				t.Fatal(err)
			}

			ext2 := New(append([]Option{WithTempParent(d)}, c.opts(d)...)...)
			p2 := harnesstest.NewScriptedProvider(
				harnesstest.CallTool("r1", ToolName, map[string]any{"id": m.ID, "op": "aggregate", "column": "amount", "func": "sum"}),
				harnesstest.Reply("done"))
			a2, err := harness.LoadSession(t.Context(), saved, harness.WithProvider(p2),
				harness.WithTools(bigTool("export", data, false)), harness.WithExtensions(ext2))
			if err != nil {
				t.Fatal(err)
			}
			defer a2.Close(context.Background())
			if got := ext2.Results(); len(got) != 1 || got[0].ID != m.ID || got[0].SHA256 != m.SHA256 || got[0].Type != TypeCSV {
				t.Fatalf("restored results = %+v", got)
			}
			res, err := a2.Run(t.Context(), "sum the amounts")
			if err != nil {
				t.Fatal(err)
			}
			r := toolResults(res.Messages)[0]
			if r.IsError || !strings.Contains(r.Content, "sum = 139980") {
				t.Fatalf("read after load: %q", r.Content)
			}
			arts, err := ext2.Artifacts(t.Context())
			if err != nil || len(arts) != 1 || arts[0].SHA256 != m.SHA256 || arts[0].Name != "spill/"+m.ID+".csv" {
				t.Fatalf("artifacts after load = %+v, %v", arts, err)
			}
		})
	}
}

func TestLoadStateValidation(t *testing.T) {
	sha := strings.Repeat("a", 64)
	id := "res_0123456789abcdef01234567"
	res := func(fields string) string {
		return `{"version":1,"results":[{"id":"` + id + `","size":10,"lines":1,"type":"text","sha256":"` + sha + `","created":"2026-01-01T00:00:00Z"` + fields + `}]}`
	}
	cases := []struct {
		name  string
		state string
		ok    bool
	}{
		{"valid", res(""), true},
		{"valid with dir", res(`,"dir":"/nonexistent/dir"`), true},
		{"no version", `{"results":[]}`, false},
		{"newer version", `{"version":2,"results":[]}`, false},
		{"not an object", `[1,2]`, false},
		{"no results", `{"version":1}`, false},
		{"unknown field", `{"version":1,"results":[],"extra":1}`, false},
		{"escaping id", strings.Replace(res(""), id, "../../../etc/passwd", 1), false},
		{"duplicate id", `{"version":1,"results":[` + strings.TrimSuffix(strings.TrimPrefix(res(""), `{"version":1,"results":[`), "]}") + "," + strings.TrimSuffix(strings.TrimPrefix(res(""), `{"version":1,"results":[`), "]}") + `]}`, false},
		{"negative size", strings.Replace(res(""), `"size":10`, `"size":-1`, 1), false},
		{"bad sha", strings.Replace(res(""), sha, "xyz", 1), false},
		{"bad type", strings.Replace(res(""), `"type":"text"`, `"type":"exe"`, 1), false},
		{"relative dir", res(`,"dir":"../x"`), false},
		{"unclean dir", res(`,"dir":"/tmp/../etc"`), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newExt(t)
			err := e.OnLoadSession(t.Context(), nil, json.RawMessage(c.state))
			if (err == nil) != c.ok {
				t.Fatalf("OnLoadSession = %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, ErrBadState) {
				t.Errorf("error %v is not ErrBadState", err)
			}
			if c.ok {
				// The file is missing: reading says so clearly.
				_, err := read(e, map[string]any{"id": id, "op": "slice"})
				if !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), id) {
					t.Errorf("read of a missing restored result: %v", err)
				}
			}
		})
	}
}

func TestConcurrentSpill(t *testing.T) {
	ext := New(WithThreshold(1000), WithTempParent(t.TempDir()))
	const n = 12
	var calls []harness.ToolCall
	var tools []*harness.Tool
	contents := make([]string, n)
	for i := range n {
		contents[i] = fmt.Sprintf("tool %d\n", i) + textData(1000+i*37)
		name := fmt.Sprintf("dump%d", i)
		tools = append(tools, bigTool(name, contents[i], false))
		calls = append(calls, harnesstest.Call(fmt.Sprintf("c%d", i), name, nil))
	}
	p := harnesstest.NewScriptedProvider(harnesstest.Response{ToolCalls: calls}, harnesstest.Reply("ok"))
	a := newAgent(t, ext, p, tools...)
	defer a.Close(context.Background())
	if _, err := a.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	ms := ext.Results()
	if len(ms) != n {
		t.Fatalf("%d results, want %d", len(ms), n)
	}
	// Read them all back in parallel, each must be its tool's content.
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Go(func() {
			out, err := read(ext, map[string]any{"id": m.ID, "op": "slice", "limit": 1})
			if err != nil {
				errs[i] = err
				return
			}
			var k int
			fmt.Sscanf(m.Tool, "dump%d", &k)
			if !strings.Contains(out, fmt.Sprintf("1: tool %d\n", k)) || m.Size != int64(len(contents[k])) {
				errs[i] = fmt.Errorf("%s: wrong content %q", m.Tool, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptionDetected(t *testing.T) {
	e := newExt(t)
	r := spillString(t, e, "logs", textData(2000))
	arts, err := e.Artifacts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(e, map[string]any{"id": r.ID, "op": "slice", "limit": 1}); err != nil {
		t.Fatalf("read before tampering: %v", err)
	}
	f, err := os.OpenFile(arts[0].Path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = read(e, map[string]any{"id": r.ID, "op": "search", "pattern": "zanzibar"})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.ID != r.ID || !strings.Contains(err.Error(), r.ID) {
		t.Fatalf("read after tampering: %v, want a CorruptError naming %s", err, r.ID)
	}
}

func TestVerifyEveryRead(t *testing.T) {
	e := newExt(t, WithVerifyEveryRead(true))
	r := spillString(t, e, "logs", textData(2000))
	for range 2 {
		if _, err := read(e, map[string]any{"id": r.ID, "op": "count"}); !errors.Is(err, ErrNotTabular) {
			t.Fatalf("read: %v", err)
		}
	}
}
