package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestSessionRoundTrip(t *testing.T) {
	ctx := context.Background()
	ext := &lifecycleExt{name: "counter", log: &orderLog{}, state: 7}
	p := ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"a"}`), ht.Reply("first answer"))
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithExtensions(ext), harness.WithSessionID("sess-1"))
	if _, err := a.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	data, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var head map[string]any
	if err := json.Unmarshal(data, &head); err != nil || head["version"] != float64(1) || head["session_id"] != "sess-1" {
		t.Fatalf("saved = %s", data)
	}

	ext2 := &lifecycleExt{name: "counter", log: &orderLog{}}
	p2 := ht.NewScriptedProvider(ht.Reply("second answer"))
	b, err := harness.LoadSession(ctx, data, harness.WithProvider(p2), harness.WithTools(echoTool()), harness.WithExtensions(ext2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if b.SessionID() != "sess-1" || ext2.state != 7 || !contains(ext2.log.list(), "counter.load") {
		t.Fatalf("restored: id %q state %d log %v", b.SessionID(), ext2.state, ext2.log.list())
	}
	if len(b.Messages()) != 4 {
		t.Fatalf("messages = %d", len(b.Messages()))
	}
	if _, err := b.Run(ctx, "and now?"); err != nil {
		t.Fatal(err)
	}
	if got := len(p2.Requests()[0].Messages); got != 5 {
		t.Errorf("restored conversation continues: %d messages sent", got)
	}
}

func TestSessionPendingApprovalsSurviveRestore(t *testing.T) {
	ctx := context.Background()
	deploy := echoTool()
	deploy.Permission = harness.PermissionAsk
	a := newAgent(t, ht.NewScriptedProvider(ht.CallTool("d1", "echo", `{"text":"prod"}`)), harness.WithTools(deploy))
	res, _ := a.Run(ctx, "deploy")
	if res.Status != harness.StatusPaused {
		t.Fatal(res.Status)
	}
	data, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deploy2 := echoTool()
	deploy2.Permission = harness.PermissionAsk
	b, err := harness.LoadSession(ctx, data, harness.WithProvider(ht.NewScriptedProvider(ht.Reply("done"))), harness.WithTools(deploy2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	res, err = b.Resume(ctx, harness.Approve("d1"))
	if err != nil || res.Text != "done" || res.Messages[2].Content[0].ToolResult.Content != "echo: prod" {
		t.Fatalf("%+v %v", res, err)
	}
}

// nanExt saves a state JSON cannot hold.
type nanExt struct{}

func (nanExt) Name() string                            { return "nan" }
func (nanExt) Install(*harness.ExtensionContext) error { return nil }
func (nanExt) OnSaveSession(context.Context, *harness.ExtensionContext) (any, error) {
	return map[string]float64{"x": math.NaN()}, nil
}

func TestSaveRejectsNonJSONState(t *testing.T) {
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(nanExt{}))
	_, err := a.SaveSession(context.Background())
	if !errors.Is(err, harness.ErrSession) || !strings.Contains(err.Error(), `"nan"`) || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadSessionErrors(t *testing.T) {
	ctx := context.Background()
	ext := &lifecycleExt{name: "counter", log: &orderLog{}}
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("x")), harness.WithExtensions(ext))
	a.Run(ctx, "hi")
	good, err := a.SaveSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data string
		exts []harness.Extension
		want string
	}{
		{"truncated", string(good[:len(good)/2]), nil, "corrupt or truncated"},
		{"not json", "garbage", nil, "corrupt or truncated"},
		{"future version", strings.Replace(string(good), `"version":1`, `"version":99`, 1), nil, "newer"},
		{"no version", `{"session_id":"x","messages":[]}`, nil, "no version"},
		{"unknown field", strings.Replace(string(good), `"version":1`, `"version":1,"surprise":true`, 1), nil, "malformed"},
		{"bad role", `{"version":1,"session_id":"x","messages":[{"role":"wizard","content":[]}]}`, nil, "unknown role"},
		{"tool call without call", `{"version":1,"session_id":"x","messages":[{"role":"assistant","content":[{"type":"tool_call"}]}]}`, nil, "malformed"},
		{"missing extension", string(good), nil, `"counter", which is not installed`},
		{"extension rejects state", strings.Replace(string(good), `"count":0`, `"count":-5`, 1), []harness.Extension{&lifecycleExt{name: "counter", log: &orderLog{}}}, "invalid state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := harness.LoadSession(ctx, []byte(c.data), harness.WithProvider(ht.NewScriptedProvider()), harness.WithExtensions(c.exts...))
			if err == nil {
				b.Close(ctx)
				t.Fatal("loaded")
			}
			if !errors.Is(err, harness.ErrSession) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzLoadSession(f *testing.F) {
	ctx := context.Background()
	ext := &lifecycleExt{name: "counter", log: &orderLog{}}
	deploy := echoTool()
	deploy.Permission = harness.PermissionAsk
	a, err := harness.New(harness.WithProvider(ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"x"}`))), harness.WithTools(deploy), harness.WithExtensions(ext))
	if err != nil {
		f.Fatal(err)
	}
	a.Run(ctx, "hi")
	seed, err := a.SaveSession(ctx)
	if err != nil {
		f.Fatal(err)
	}
	a.Close(ctx)
	f.Add(seed)
	f.Add([]byte(`{"version":1,"session_id":"s","messages":[]}`))
	f.Add([]byte(`{"version":1,"session_id":"s","messages":[{"role":"tool","content":[{"type":"tool_result","tool_result":{"call_id":"c","name":"n","content":"x"}}]}]}`))
	f.Add([]byte(`{"version":1,"session_id":"s","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","media":{"mime_type":"image/png","name":"a.png","data":"iVBORw0KGgo="}},{"type":"document","media":{"uri":"https://example.com/a.pdf"}},{"type":"audio","media":{"file_id":"f1","mime_type":"audio/wav"}}]},` +
		`{"role":"tool","content":[{"type":"tool_result","tool_result":{"call_id":"c","name":"n","content":"x","parts":[{"type":"image","media":{"mime_type":"image/png","data":"AAEC"}},{"type":"text","text":"t"}]}}]}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := &lifecycleExt{name: "counter", log: &orderLog{}}
		b, err := harness.LoadSession(ctx, data, harness.WithProvider(ht.NewScriptedProvider(ht.Reply("ok"))), harness.WithTools(echoTool()), harness.WithExtensions(ext))
		if err != nil {
			if !errors.Is(err, harness.ErrSession) {
				t.Fatalf("load error does not wrap ErrSession: %v", err)
			}
			return
		}
		defer b.Close(ctx)
		// Round trip: what loads saves, and loads again to the same thing.
		again, err := b.SaveSession(ctx)
		if err != nil {
			t.Fatalf("save after load: %v", err)
		}
		c, err := harness.LoadSession(ctx, again, harness.WithProvider(ht.NewScriptedProvider()), harness.WithTools(echoTool()), harness.WithExtensions(&lifecycleExt{name: "counter", log: &orderLog{}}))
		if err != nil {
			t.Fatalf("reload of a saved session: %v\n%s", err, again)
		}
		defer c.Close(ctx)
		third, _ := c.SaveSession(ctx)
		if string(third) != string(again) {
			t.Fatalf("round trip differs:\n%s\n%s", again, third)
		}
		// A loaded session can run (or resume) without crashing.
		if _, err := b.Run(ctx, "next"); err != nil && !errors.Is(err, harness.ErrPaused) {
			_ = err // provider errors are fine; panics are not
		}
	})
}

func TestExtensionState(t *testing.T) {
	ctx := context.Background()
	log := &orderLog{}
	src := &lifecycleExt{name: "counter", log: log, state: 7}
	a := newAgent(t, ht.NewScriptedProvider(ht.Reply("x")), harness.WithExtensions(src))
	a.Run(ctx, "hi")
	state, err := a.SaveExtensionState(harness.AsSnapshot(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if string(state) != `{"counter":{"count":7,"version":1}}` {
		t.Fatalf("state = %s", state)
	}

	// Into another agent: the state moves, the conversation does not.
	dst := &lifecycleExt{name: "counter", log: &orderLog{}}
	b := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(dst))
	if err := b.LoadExtensionState(ctx, state); err != nil {
		t.Fatal(err)
	}
	if dst.state != 7 {
		t.Fatalf("loaded count = %d, want 7", dst.state)
	}
	if n := len(b.Messages()); n != 0 {
		t.Fatalf("loading extension state changed the conversation: %d messages", n)
	}

	// Nothing to save: nil, no error.
	plain := newAgent(t, ht.NewScriptedProvider())
	if st, err := plain.SaveExtensionState(ctx); err != nil || st != nil {
		t.Fatalf("no savers: %s, %v", st, err)
	}

	// Bad input loads nothing and names the problem.
	other := &lifecycleExt{name: "other", log: &orderLog{}, state: 3}
	c := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(other))
	for _, tc := range []struct{ state, want string }{
		{`{"counter":{"version":1,"count":1}}`, `"counter", which is not installed`},
		// Every missing name, in name order, whatever the map's order.
		{`{"zeta":1,"other":{"version":1,"count":1},"counter":{},"alpha":2}`, `extensions "alpha", "counter", "zeta", which are not installed`},
		{`{"other":{"version":1,"count":-1}}`, "invalid state"},
		{`{"":{}}`, "empty name"},
		{`[1]`, "not a JSON object"},
		{`{"other":`, "not a JSON object"},
	} {
		err := c.LoadExtensionState(ctx, json.RawMessage(tc.state))
		if !errors.Is(err, harness.ErrSession) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("load %s: err = %v, want %q", tc.state, err, tc.want)
		}
		if other.state != 3 {
			t.Fatalf("load %s changed the state to %d", tc.state, other.state)
		}
	}
	c.Close(ctx)
	if _, err := c.SaveExtensionState(ctx); !errors.Is(err, harness.ErrClosed) {
		t.Fatalf("save after Close: %v", err)
	}
	if err := c.LoadExtensionState(ctx, state); !errors.Is(err, harness.ErrClosed) {
		t.Fatalf("load after Close: %v", err)
	}
}

// versionedExt counts its saves and reports a version it is told.
type versionedExt struct {
	ver   atomic.Uint64
	saves atomic.Int64
}

func (e *versionedExt) Name() string                            { return "versioned" }
func (e *versionedExt) Install(*harness.ExtensionContext) error { return nil }
func (e *versionedExt) StateVersion() uint64                    { return e.ver.Load() }
func (e *versionedExt) OnSaveSession(context.Context, *harness.ExtensionContext) (any, error) {
	e.saves.Add(1)
	return map[string]uint64{"v": e.ver.Load()}, nil
}

func TestExtensionStateSnapshotReuse(t *testing.T) {
	ctx := context.Background()
	snap := harness.AsSnapshot(ctx)
	v := &versionedExt{}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(v))
	first, err := a.SaveExtensionState(snap)
	if err != nil || string(first) != `{"versioned":{"v":0}}` {
		t.Fatalf("%s %v", first, err)
	}
	again, err := a.SaveExtensionState(snap)
	if err != nil || v.saves.Load() != 1 || &again[0] != &first[0] {
		t.Fatalf("unchanged version: %d saves, same slice %v, %v", v.saves.Load(), &again[0] == &first[0], err)
	}
	v.ver.Add(1)
	moved, err := a.SaveExtensionState(snap)
	if err != nil || v.saves.Load() != 2 || string(moved) != `{"versioned":{"v":1}}` {
		t.Fatalf("moved version: %s, %d saves, %v", moved, v.saves.Load(), err)
	}
	// A save that is not a snapshot always asks the extension.
	if _, err := a.SaveExtensionState(ctx); err != nil || v.saves.Load() != 3 {
		t.Fatalf("plain save: %d saves, %v", v.saves.Load(), err)
	}
	if _, err := a.SaveSession(ctx); err != nil || v.saves.Load() != 4 {
		t.Fatalf("SaveSession: %d saves, %v", v.saves.Load(), err)
	}
	// A session snapshot (the flight recorder's) reuses the state as
	// SaveExtensionState does, and sees a version that moved.
	for range 2 {
		s, err := a.SaveSession(snap)
		if err != nil || v.saves.Load() != 4 || !strings.Contains(string(s), `"extensions":{"versioned":{"v":1}}`) {
			t.Fatalf("session snapshot, unchanged version: %s, %d saves, %v", s, v.saves.Load(), err)
		}
	}
	v.ver.Add(1)
	if s, err := a.SaveSession(snap); err != nil || v.saves.Load() != 5 || !strings.Contains(string(s), `"extensions":{"versioned":{"v":2}}`) {
		t.Fatalf("session snapshot, moved version: %s, %d saves, %v", s, v.saves.Load(), err)
	}
}

// loadingVersionedExt keeps its version when it loads a state, which a
// StateVersioner should not do: the snapshot after a load must not reuse
// the encoding from before it.
type loadingVersionedExt struct {
	versionedExt
	n int
}

func (e *loadingVersionedExt) OnSaveSession(ctx context.Context, ec *harness.ExtensionContext) (any, error) {
	e.saves.Add(1)
	return map[string]int{"n": e.n}, nil
}

func (e *loadingVersionedExt) OnLoadSession(_ context.Context, _ *harness.ExtensionContext, raw json.RawMessage) error {
	var st struct{ N int }
	err := json.Unmarshal(raw, &st)
	e.n = st.N
	return err
}

func TestExtensionStateSnapshotAfterLoad(t *testing.T) {
	ctx := context.Background()
	snap := harness.AsSnapshot(ctx)
	e := &loadingVersionedExt{}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithExtensions(e))
	if st, err := a.SaveExtensionState(snap); err != nil || string(st) != `{"versioned":{"n":0}}` {
		t.Fatalf("%s %v", st, err)
	}
	if err := a.LoadExtensionState(ctx, json.RawMessage(`{"versioned":{"n":5}}`)); err != nil {
		t.Fatal(err)
	}
	if st, err := a.SaveExtensionState(snap); err != nil || string(st) != `{"versioned":{"n":5}}` {
		t.Fatalf("after a load: %s %v", st, err)
	}
}
