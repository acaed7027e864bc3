package harness_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// systemSwitch changes the system prompt when on is set.
type systemSwitch struct{ on *bool }

func (s systemSwitch) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	if *s.on {
		req.System += " (changed)"
	}
	return nil
}

func TestPrefixKey(t *testing.T) {
	on := false
	p := ht.NewScriptedProvider(ht.CallTool("c1", "echo", `{"text":"a"}`), ht.Reply("one"), ht.Reply("two"), ht.Reply("three"), ht.Reply("four"))
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithSystemPrompt("sys"), harness.WithMiddleware(systemSwitch{&on}))
	ctx := context.Background()
	if _, err := a.Run(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, "second"); err != nil {
		t.Fatal(err)
	}
	on = true
	if _, err := a.Run(ctx, "third"); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	keys := make([]harness.PrefixKey, len(reqs))
	for i, r := range reqs {
		keys[i] = r.PrefixKey
		if r.PrefixKey.Key.IsZero() || r.PrefixKey.PrefixMessages != len(r.Messages)-1 {
			t.Fatalf("request %d: key %+v", i, r.PrefixKey)
		}
	}
	// Growth of the conversation keeps the cache: nothing reported.
	for i := 1; i < 3; i++ {
		if keys[i].Key == keys[i-1].Key {
			t.Errorf("request %d: key did not move with the prefix", i)
		}
		if len(keys[i].Changed) != 0 {
			t.Errorf("request %d: growth reported as change %v", i, keys[i].Changed)
		}
		if keys[i].System != keys[0].System || keys[i].Tools != keys[0].Tools || keys[i].Model != keys[0].Model {
			t.Errorf("request %d: stable parts changed", i)
		}
	}
	if !slices.Equal(keys[3].Changed, []string{harness.PrefixPartSystem}) {
		t.Errorf("changed = %v, want [system]", keys[3].Changed)
	}
	parts := keys[3].Parts()
	if parts[2].Name != "system" || parts[2].Hash != keys[3].System || len(keys[3].Key.String()) != 64 {
		t.Errorf("parts = %+v", parts)
	}
	// Only the session's first request is First, until a Reset.
	for i, k := range keys {
		if k.First != (i == 0) {
			t.Errorf("request %d: First = %v", i, k.First)
		}
	}
	a.Reset()
	if _, err := a.Run(ctx, "fourth"); err != nil {
		t.Fatal(err)
	}
	if reqs := p.Requests(); !reqs[len(reqs)-1].PrefixKey.First {
		t.Error("the first request after Reset is not First")
	}
}

func TestPrefixKeyDetectsRewrittenHistory(t *testing.T) {
	rewrite := false
	p := ht.NewScriptedProvider(ht.Reply("one"), ht.Reply("two"), ht.Reply("three"))
	mw := historyRewriter{&rewrite}
	a := newAgent(t, p, harness.WithMiddleware(mw))
	ctx := context.Background()
	a.Run(ctx, "first")
	a.Run(ctx, "second")
	rewrite = true
	a.Run(ctx, "third")
	reqs := p.Requests()
	if got := reqs[1].PrefixKey.Changed; len(got) != 0 {
		t.Errorf("growth reported as %v", got)
	}
	if got := reqs[2].PrefixKey.Changed; !slices.Equal(got, []string{harness.PrefixPartMessages}) {
		t.Errorf("changed = %v, want [messages]", got)
	}
}

// historyRewriter replaces the first message (as a summarizer would).
type historyRewriter struct{ on *bool }

func (h historyRewriter) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	if *h.on {
		msgs := slices.Clone(req.Messages)
		msgs[0] = harness.UserMessage("summary of earlier turns")
		req.Messages = msgs
	}
	return nil
}

func TestPrefixKeyIsDeterministicAcrossAgents(t *testing.T) {
	key := func() harness.PrefixKey {
		p := ht.NewScriptedProvider(ht.Reply("x"))
		a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithSystemPrompt("s"))
		a.Run(context.Background(), "q")
		return p.Requests()[0].PrefixKey
	}
	if k1, k2 := key(), key(); k1.Key != k2.Key {
		t.Errorf("keys differ: %s %s", k1.Key, k2.Key)
	}
}

// TestPrefixKeyCoversProviderData: a reasoning part's provider data (a
// thinking signature) is sent back to the model, so it is part of the key.
func TestPrefixKeyCoversProviderData(t *testing.T) {
	keyWith := func(sig string) harness.Hash {
		p := ht.NewScriptedProvider(ht.Reply("x"))
		msgs := []harness.Message{
			harness.UserMessage("q"),
			{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartReasoning, Text: "thinking", ProviderData: []byte(sig)}}},
			harness.UserMessage("next"),
		}
		data, _ := json.Marshal(map[string]any{"version": 1, "session_id": "s", "messages": msgs[:2]})
		b, err := harness.LoadSession(context.Background(), data, harness.WithProvider(p))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(context.Background())
		if _, err := b.Run(context.Background(), "next"); err != nil {
			t.Fatal(err)
		}
		return p.Requests()[0].PrefixKey.Messages
	}
	if keyWith(`{"signature":"a"}`) == keyWith(`{"signature":"b"}`) {
		t.Error("provider data is sent to the model and must be part of the prefix key")
	}
}

// keyProvider answers "ok" and keeps the prefix keys it is sent; uses is
// what it says to harness.PrefixKeyUser.
type keyProvider struct {
	uses bool
	keys []harness.PrefixKey
}

func (p *keyProvider) Generate(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	p.keys = append(p.keys, req.PrefixKey)
	return &harness.ModelResponse{Message: harness.AssistantMessage("ok")}, nil
}

func (p *keyProvider) UsesPrefixKey() bool { return p.uses }

// TestPrefixKeyOnlyWhenRead: the key is computed when the provider reads
// it or a hook, interceptor or response middleware may, and it is the same
// key then as always.
func TestPrefixKeyOnlyWhenRead(t *testing.T) {
	ctx := context.Background()
	run := func(p *keyProvider, opts ...harness.Option) []harness.PrefixKey {
		t.Helper()
		a := newAgent(t, p, append([]harness.Option{harness.WithSystemPrompt("sys"), harness.WithTools(echoTool())}, opts...)...)
		for _, in := range []string{"one", "two", "three"} {
			if _, err := a.Run(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		return p.keys
	}
	want := run(&keyProvider{uses: true})
	for i, k := range want {
		if k.Key.IsZero() {
			t.Fatalf("request %d: no key for a provider that reads it", i)
		}
	}
	for i, k := range run(&keyProvider{}) {
		if !k.Key.IsZero() || !k.Messages.IsZero() {
			t.Errorf("request %d: key %v computed that nothing reads", i, k.Key)
		}
	}
	var seen []harness.PrefixKey
	hook := harness.WithHook(harness.EventModelRequestStart, func(_ context.Context, ev *harness.Event) error {
		seen = append(seen, ev.Request.PrefixKey)
		return nil
	})
	run(&keyProvider{}, hook)
	if len(seen) != len(want) {
		t.Fatalf("hook saw %d requests, want %d", len(seen), len(want))
	}
	for i := range want {
		if seen[i].Key != want[i].Key || seen[i].Messages != want[i].Messages || seen[i].PrefixMessages != want[i].PrefixMessages {
			t.Errorf("request %d: hook saw key %v, want %v", i, seen[i].Key, want[i].Key)
		}
	}
}
