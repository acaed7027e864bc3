package tracing

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/redact"
)

func TestAppendMessagesIsValidJSON(t *testing.T) {
	msgs := []harness.Message{
		harness.UserMessage("hi \"there\""),
		{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartReasoning, Text: "think"},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c1", Name: "x", Input: json.RawMessage(`{"a":1}`)}},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c2", Name: "y", Input: json.RawMessage(`{broken`)}},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "c3", Name: "z"}},
			{Type: harness.PartToolCall}, // no call: skipped
		}},
		{Role: harness.RoleTool, Content: []harness.Part{
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "c1", Content: "r"}},
			{Type: "image"},
		}},
	}
	b := appendMessages(nil, msgs, nil)
	var got []struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	tests := []struct {
		msg, part int
		key       string
		want      any
	}{
		{0, 0, "content", `hi "there"`},
		{1, 0, "type", "reasoning"},
		{1, 1, "arguments", map[string]any{"a": float64(1)}},
		{1, 2, "arguments", "{broken"},
		{1, 3, "arguments", map[string]any{}},
		{2, 0, "type", "tool_call_response"},
		{2, 0, "response", "r"},
		{2, 1, "type", "image"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.msg, tt.part, tt.key), func(t *testing.T) {
			if got := got[tt.msg].Parts[tt.part][tt.key]; fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
	if n := len(got[1].Parts); n != 4 {
		t.Errorf("assistant message has %d parts, want 4 (the empty tool call skipped)", n)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		v    string
		max  int
	}{
		{"ascii", strings.Repeat("a", 1000), 200},
		{"multibyte boundary", strings.Repeat("日本", 300), 201},
		{"cap smaller than marker", strings.Repeat("a", 1000), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, kept := truncate(tt.v, tt.max)
			if !utf8.ValidString(out) {
				t.Error("invalid UTF-8")
			}
			if out[:kept] != tt.v[:kept] {
				t.Error("kept part differs")
			}
			if tt.max > 120 && len(out) > tt.max {
				t.Errorf("%d bytes > %d", len(out), tt.max)
			}
			if !strings.Contains(out, fmt.Sprintf("[truncated by harnessx: %d bytes, sha256=", len(tt.v))) {
				t.Errorf("no marker: %q", out)
			}
		})
	}
}

type typedErr struct{}

func (typedErr) Error() string { return "typed" }

func TestErrorType(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{context.Canceled, "cancelled"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout"},
		{&harness.MaxStepsError{Steps: 3}, "max_steps"},
		{&harness.ExtensionError{Extension: "x", Op: "turn_start", Err: errors.New("no")}, "extension_error"},
		{&harness.ExtensionError{Extension: "x", Op: "turn_start", Err: &harness.PanicError{Value: 1}}, "panic"},
		{&harness.ProviderError{Err: &harnesstest.RetryableError{Msg: "429"}}, "*harnesstest.RetryableError"},
		{&harness.ProviderError{Err: errors.New("plain")}, "_OTHER"},
		{fmt.Errorf("wrapped: %w", typedErr{}), "tracing.typedErr"},
		{nil, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			if got := errorType(tt.err); got != tt.want {
				t.Errorf("errorType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	tests := map[harness.StopReason]string{
		harness.StopEndTurn: "stop", harness.StopSequence: "stop", harness.StopMaxTokens: "length",
		harness.StopToolUse: "tool_call", harness.StopContentFilter: "content_filter",
		harness.StopRefusal: "content_filter", harness.StopPause: "pause_turn", "": "stop",
	}
	for in, want := range tests {
		t.Run(string(in), func(t *testing.T) {
			if got := finishReason(in); got != want {
				t.Errorf("%q → %q, want %q", in, got, want)
			}
		})
	}
}

func TestHistoryCacheMatchesFullEncoding(t *testing.T) {
	var h historyCache
	var msgs []harness.Message
	add := func(m harness.Message) { msgs = append(msgs, m) }
	check := func(step string, in []harness.Message) {
		t.Helper()
		got, _ := h.encode(context.Background(), nil, in)
		want := string(appendMessages(nil, in, nil))
		if got != want {
			t.Fatalf("%s:\n got %s\nwant %s", step, got, want)
		}
	}
	steps := []struct {
		name string
		do   func() []harness.Message
	}{
		{"empty", func() []harness.Message { return nil }},
		{"first message", func() []harness.Message { add(harness.UserMessage("hi")); return msgs }},
		{"growth", func() []harness.Message {
			add(harness.AssistantMessage("hello"))
			add(harness.UserMessage("more"))
			return msgs
		}},
		{"same again", func() []harness.Message { return msgs }},
		{"a middleware replaced the middle message", func() []harness.Message {
			c := slices.Clone(msgs)
			c[1] = harness.AssistantMessage("edited")
			return c
		}},
		{"back to the history", func() []harness.Message { return msgs }},
		{"a shorter list", func() []harness.Message { return msgs[:1] }},
		{"reset conversation", func() []harness.Message {
			msgs = nil
			add(harness.UserMessage("new"))
			return msgs
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { check(s.name, s.do()) })
	}
}

// TestMessageScanCoversEncoding checks mayContainSecret against the
// encoding it stands for: a secret in any one string appendMessage writes
// is seen; the member names and punctuation hold no candidate word; and
// for random messages built from fragments of candidate words, control
// bytes and escapes, a message it calls clean is one whose encoding holds
// no candidate word, which the built-in rules leave unchanged.
func TestMessageScanCoversEncoding(t *testing.T) {
	const secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
	// build returns a message with every kind of part, whose strings are
	// all "x" but the one that set changes.
	build := func(set func(m *harness.Message)) harness.Message {
		m := harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
			{Type: harness.PartText, Text: "x"},
			{Type: harness.PartReasoning, Text: "x"},
			{Type: harness.PartToolCall, ToolCall: &harness.ToolCall{ID: "x", Name: "x", Input: json.RawMessage(`{"x":"x"}`)}},
			{Type: harness.PartToolResult, ToolResult: &harness.ToolResult{CallID: "x", Content: "x",
				Parts: []harness.Part{harness.Text("x"), harness.ImagePart([]byte("x"), "x/x")}}},
			{Type: "x"},
			harness.ImagePart([]byte("x"), "x/x").Named("x"),
			harness.ImageURL("x"),
			harness.FilePart("x", "x/x"),
			harness.ImageURL("data:x/x;base64,eA=="),
			{Type: harness.PartAudio}, // no media
		}}
		if set != nil {
			set(&m)
		}
		return m
	}
	plain := build(nil)
	for _, finish := range []string{"", "stop", "tool_call", "length", "content_filter"} {
		enc := appendMessage(nil, &plain, finish, nil)
		if mayContainSecret(&plain, finish) || redact.MayContainSecret(enc) {
			t.Fatalf("the structure alone is suspect: %s", enc)
		}
	}
	fields := map[string]func(m *harness.Message){
		"role":           func(m *harness.Message) { m.Role = harness.Role(secret) },
		"text":           func(m *harness.Message) { m.Content[0].Text = secret },
		"reasoning":      func(m *harness.Message) { m.Content[1].Text = secret },
		"call id":        func(m *harness.Message) { m.Content[2].ToolCall.ID = secret },
		"call name":      func(m *harness.Message) { m.Content[2].ToolCall.Name = secret },
		"call input":     func(m *harness.Message) { m.Content[2].ToolCall.Input = json.RawMessage(`{"x":"` + secret + `"}`) },
		"bad call input": func(m *harness.Message) { m.Content[2].ToolCall.Input = json.RawMessage(secret) },
		"result call id": func(m *harness.Message) { m.Content[3].ToolResult.CallID = secret },
		"result":         func(m *harness.Message) { m.Content[3].ToolResult.Content = secret },
		"other type":     func(m *harness.Message) { m.Content[4].Type = harness.PartType(secret) },
		"result text part": func(m *harness.Message) {
			m.Content[3].ToolResult.Parts[0].Text = secret
		},
		"result media mime": func(m *harness.Message) {
			m.Content[3].ToolResult.Parts[1].Media = &harness.Media{Data: []byte("x"), MIME: secret}
		},
		"media mime": func(m *harness.Message) { m.Content[5].Media = &harness.Media{Data: []byte("x"), MIME: secret} },
		"media name": func(m *harness.Message) {
			m.Content[5].Media = &harness.Media{Data: []byte("x"), MIME: "x/x", Name: secret}
		},
		"media uri": func(m *harness.Message) { m.Content[6].Media = &harness.Media{URI: "https://h/x?token=" + secret} },
		"file id":   func(m *harness.Message) { m.Content[7].Media = &harness.Media{FileID: secret} },
		"data uri type": func(m *harness.Message) {
			m.Content[8].Media = &harness.Media{URI: "data:" + secret + ";base64,eA=="}
		},
		"no media type": func(m *harness.Message) { m.Content[9].Type = harness.PartType(secret) },
	}
	for name, set := range fields {
		m := build(set)
		enc := string(appendMessage(nil, &m, "", nil))
		if redact.Builtin().String(enc) == enc {
			t.Fatalf("%s: the rules do not see the secret in %s", name, enc)
		}
		if !mayContainSecret(&m, "") {
			t.Errorf("%s: a secret there is not seen", name)
		}
	}
	if m := build(nil); !mayContainSecret(&m, secret) {
		t.Error("finish: a secret there is not seen")
	}

	// Random messages from pieces of candidate words, escapes and text.
	pieces := []string{"to", "ken", "k", "ey", "se", "cret", "pa", "ssw", "au", "thorization", "sk", "-", "be", "arer",
		"ak", "ia", "as", "aw", "s", "oken", "earer", "ws", "kia", "----", "BEGIN", "://", "u", ":", "p@h", "=", " ", "\"", "\\", "\t", "\b", "\n",
		"\r", "\f", "\v", "\x1a", "\x1b", "\x1c", "\x00", "\xff", "\u2028", "<", ">", "&", "x", "abcdEFGH1234ijklMNOP5678", "Bearer ", "AKIA"}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	rb := redact.Builtin()
	clean := 0
	for range 20000 {
		m := build(func(m *harness.Message) {
			m.Content[0].Text, m.Content[1].Text = str(), str()
			in, _ := json.Marshal(map[string]string{str(): str()})
			if rng.IntN(4) == 0 {
				in = []byte(str()) // not JSON: encoded as a string
			}
			m.Content[2].ToolCall = &harness.ToolCall{ID: str(), Name: str(), Input: in}
			m.Content[3].ToolResult = &harness.ToolResult{CallID: str(), Content: str()}
			// The strings of media parts in one message of four, so that
			// enough messages stay clean.
			if rng.IntN(4) == 0 {
				m.Content[3].ToolResult.Parts = []harness.Part{harness.Text(str()), harness.ImagePart([]byte(str()+"x"), str())}
				m.Content[5] = harness.ImagePart([]byte(str()+"x"), str()).Named(str())
				m.Content[6] = harness.ImageURL(str() + "x")
				m.Content[7] = harness.FilePart(str()+"x", str())
			}
		})
		if mayContainSecret(&m, "") {
			continue
		}
		clean++
		// Clean means more than unchanged: no candidate word at all.
		enc := string(appendMessage(nil, &m, "", nil))
		if redact.MayContainSecret(enc) {
			t.Fatalf("called clean, but the rules find a candidate word in\n%q", enc)
		}
		if got := rb.String(enc); got != enc {
			t.Fatalf("called clean, but the rules change it:\n%q\n%q", enc, got)
		}
	}
	if clean < 100 {
		t.Fatalf("only %d of the random messages were clean: the check tells little", clean)
	}
}

// TestHashHex: the prefix-key parts in hex are what encoding/hex gives.
func TestHashHex(t *testing.T) {
	var a, b harness.Hash
	for i := range a {
		a[i], b[i] = byte(i*37+11), byte(255-i*13)
	}
	for _, h := range []harness.Hash{{}, a, b} {
		if got, want := hexString(h), hex.EncodeToString(h[:]); got != want {
			t.Errorf("hexString = %s, want %s", got, want)
		}
	}
}

// TestKnownWordsClean checks that the roles and finish reasons that
// mayContainSecret does not scan hold no candidate word for the rules.
func TestKnownWordsClean(t *testing.T) {
	for _, w := range []string{string(harness.RoleUser), string(harness.RoleAssistant), string(harness.RoleTool),
		"", "stop", "length", "tool_call", "content_filter"} {
		if !knownRole(harness.Role(w)) && !knownFinish(w) {
			t.Errorf("%q is not known", w)
		}
		if redact.MayContainSecretInJSON(w) {
			t.Errorf("%q may contain a secret, but is not scanned", w)
		}
	}
}

// TestVerdictsFollowValues checks that the history cache reuses a clean
// verdict only for the values it was given for: a tool result whose
// content was replaced after it was found clean is scanned (and
// redacted) again, and so is a message that is not the one noted.
func TestVerdictsFollowValues(t *testing.T) {
	const secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
	h := historyCache{red: redact.Builtin()}
	res := &harness.ToolResult{CallID: "c1", Content: "fine"}
	reply := harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{harness.Text("calling")}}
	h.noteCleanMessage(&reply)
	h.noteCleanResult(res)
	res.Content = "key " + secret // replaced after the verdict
	msgs := []harness.Message{
		harness.UserMessage("hi"),
		{Role: harness.RoleAssistant, Content: []harness.Part{harness.Text("token " + secret)}}, // not the noted reply
		{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: res}}},
	}
	out, sum := h.encode(context.Background(), nil, msgs)
	if strings.Contains(out, secret) || !sum.changed {
		t.Fatalf("secret kept: %s", out)
	}
	// The noted reply and an unchanged result keep their verdicts.
	res2 := &harness.ToolResult{CallID: "c2", Content: "fine"}
	h.noteCleanMessage(&reply)
	h.noteCleanResult(res2)
	msgs = append(msgs, reply, harness.Message{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult, ToolResult: res2}}})
	h.mu.Lock()
	if !h.knownCleanLocked(&msgs[3], idOf(&msgs[3])) || !h.knownCleanLocked(&msgs[4], idOf(&msgs[4])) {
		t.Error("noted values not known clean")
	}
	h.mu.Unlock()
	if !h.cleanText(reply.Content[0].Text) || h.cleanText(strings.Clone(reply.Content[0].Text)) {
		t.Error("text verdicts go by identity")
	}
}

// TestHistoryCacheLetsOldMessagesGo checks that the history cache does
// not keep the messages of a longer conversation alive once a shorter one
// (after a reset) is encoded (the identities it keeps past the common
// prefix point into them), nor the room they took.
func TestHistoryCacheLetsOldMessagesGo(t *testing.T) {
	h := historyCache{red: redact.Builtin()}
	long := make([]harness.Message, 1000)
	for i := range long {
		long[i] = harness.UserMessage(fmt.Sprintf("message %d", i))
	}
	var collected atomic.Int32
	for i := range long {
		runtime.AddCleanup(&long[i].Content[0], func(*atomic.Int32) { collected.Add(1) }, &collected)
	}
	h.encode(context.Background(), nil, long)
	long = nil
	h.encode(context.Background(), nil, []harness.Message{harness.UserMessage("again")})
	for i := 0; i < 20 && collected.Load() < 1000; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if n := collected.Load(); n != 1000 {
		t.Fatalf("%d of the 1000 old messages' parts were collected; the cache keeps the rest alive", n)
	}
	// Nor the room they took: the collector would scan it at every cycle.
	if c := cap(h.ids); c > 256 {
		t.Errorf("the cache keeps room for %d messages after a conversation of 1", c)
	}
	runtime.KeepAlive(&h)
}
