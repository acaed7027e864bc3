package harness

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEncodeSessionIsMarshal checks that encodeSession and
// encodeExtensionStates give the bytes of json.Marshal over the same
// session or states, whatever fields are set, for states that are
// json.Marshal's output (as saveExtensions makes them).
func TestEncodeSessionIsMarshal(t *testing.T) {
	// The states as saveExtensions makes them: json.Marshal's output.
	marshal := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	states := map[string]json.RawMessage{
		"spill":        marshal(map[string]any{"version": 1, "results": []map[string]string{{"id": "res_1", "tool": "a<b>&c \u2028"}}}),
		"a\"<&>\u2028": marshal([]any{1, 2, map[string]any{"x": nil}}),
		"mcp":          marshal("s"),
	}
	msgs := []Message{UserMessage("hi <there> & \u2028"), {Role: RoleAssistant, Content: []Part{Text("ok")}}}
	for _, tc := range []struct {
		name string
		d    sessionData
		exts map[string]json.RawMessage
	}{
		{"empty", sessionData{Version: SessionVersion, SessionID: "s", Messages: []Message{}}, nil},
		{"no savers", sessionData{Version: SessionVersion, SessionID: "s", Agent: "a", Model: "m", Messages: msgs}, map[string]json.RawMessage{}},
		{"states", sessionData{Version: SessionVersion, SessionID: "s", Messages: msgs}, states},
		{"states and tools", sessionData{Version: SessionVersion, SessionID: "s", Model: "m", Messages: msgs, ActiveTools: []string{"x", "<y>"}}, states},
		{"tools only", sessionData{Version: SessionVersion, SessionID: "s", Messages: msgs, ActiveTools: []string{"x"}}, nil},
		{"pending", sessionData{Version: SessionVersion, SessionID: "s", Messages: msgs, Pending: &pendingRun{RunID: "r", Input: "in"}}, states},
	} {
		want := tc.d
		want.Extensions = tc.exts
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := encodeSession(tc.d, tc.exts)
		if err != nil {
			t.Fatal(tc.name, err)
		}
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, gb, wb)
		}
		if tc.exts == nil {
			continue
		}
		// SaveExtensionState's encoding of the states alone.
		wb, err = json.Marshal(tc.exts)
		if err != nil {
			t.Fatal(err)
		}
		if gb := encodeExtensionStates(tc.exts); !bytes.Equal(gb, wb) {
			t.Errorf("%s, states alone:\n got %s\nwant %s", tc.name, gb, wb)
		}
	}
}
