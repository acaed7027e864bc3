package harness

import (
	"context"
	"regexp"
	"testing"
)

func TestRunIDs(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	var g runIDs
	var first string
	for i := range 1000 {
		var b [runIDLen]byte
		g.next(&b)
		id := string(b[:])
		if !hex32.MatchString(id) || validRunID(id) != nil {
			t.Fatalf("run ID %q is not 32 hex digits valid for ContextWithRunID", id)
		}
		if seen[id] {
			t.Fatalf("run ID %q made twice", id)
		}
		seen[id] = true
		if i == 0 {
			first = id
		} else if id[:24] != first[:24] {
			t.Fatalf("prefix changed: %q after %q", id, first)
		}
	}
	// Another agent draws another prefix.
	var h runIDs
	var b [runIDLen]byte
	h.next(&b)
	if string(b[:24]) == first[:24] {
		t.Fatalf("two agents drew the prefix %q", first[:24])
	}
	// The counter wraps with a new prefix, never reusing an ID.
	g.n = 0xffffffff
	g.next(&b)
	if string(b[24:]) != "ffffffff" || string(b[:24]) != first[:24] {
		t.Fatalf("last ID %q", b)
	}
	g.next(&b)
	if string(b[24:]) != "00000000" || string(b[:24]) == first[:24] {
		t.Fatalf("after the wrap %q, want a new prefix than %q", b, first[:24])
	}
}

// TestRunIDsOfRuns: runs of one agent get distinct IDs, which are valid
// run IDs for a later run, and the result's ID is the one the run's hooks
// and context saw.
func TestRunIDsOfRuns(t *testing.T) {
	p := ProviderFunc(func(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
		if RunIDFromContext(ctx) != req.RunID {
			t.Errorf("context run ID %q, request %q", RunIDFromContext(ctx), req.RunID)
		}
		return &ModelResponse{Message: AssistantMessage("ok")}, nil
	})
	a, err := New(WithProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(WithProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := map[string]bool{}
	for range 3 {
		for _, ag := range []*Agent{a, b} {
			res, err := ag.Run(ctx, "hi")
			if err != nil {
				t.Fatal(err)
			}
			if ids[res.RunID] {
				t.Fatalf("run ID %q twice", res.RunID)
			}
			ids[res.RunID] = true
		}
	}
	for id := range ids {
		res, err := a.Run(ContextWithRunID(ctx, id+"-again"), "hi")
		if err != nil || res.RunID != id+"-again" {
			t.Fatalf("run with ID %q: %v, %q", id+"-again", err, res.RunID)
		}
	}
}

// TestEngineMessagesDoNotGrow: the user and tool messages the engine
// builds share chunks of parts, so their contents have no room to grow
// into a neighbour's.
func TestEngineMessagesDoNotGrow(t *testing.T) {
	n := 0
	tool, err := NewTool("t", "A tool.", func(context.Context, struct{}) (string, error) { return "r", nil })
	if err != nil {
		t.Fatal(err)
	}
	p := ProviderFunc(func(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
		n++
		if n%2 == 1 {
			return &ModelResponse{Message: Message{Role: RoleAssistant, Content: []Part{
				{Type: PartToolCall, ToolCall: &ToolCall{ID: "a", Name: "t", Input: []byte(`{}`)}},
				{Type: PartToolCall, ToolCall: &ToolCall{ID: "b", Name: "t", Input: []byte(`{}`)}}}}}, nil
		}
		return &ModelResponse{Message: AssistantMessage("ok")}, nil
	})
	a, err := New(WithProvider(p), WithTools(tool))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := a.Run(context.Background(), "hi"); err != nil {
			t.Fatal(err)
		}
	}
	msgs := a.Messages()
	if len(msgs) != 20 {
		t.Fatalf("%d messages, want 20", len(msgs))
	}
	for i, m := range msgs {
		if m.Role != RoleAssistant && cap(m.Content) != len(m.Content) {
			t.Errorf("message %d (%s): content cap %d, len %d", i, m.Role, cap(m.Content), len(m.Content))
		}
		if m.Role == RoleTool && (len(m.Content) != 2 || m.Content[0].ToolResult.CallID != "a" || m.Content[1].ToolResult.CallID != "b") {
			t.Errorf("message %d: tool message %+v", i, m.Content)
		}
		if m.Role == RoleUser && m.Text() != "hi" {
			t.Errorf("message %d: user message %q", i, m.Text())
		}
	}
}
