package harness

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"unsafe"
)

// runIDLen is the length of the run IDs an agent makes.
const runIDLen = 32

// runIDs makes an agent's run IDs: 32 lower-case hex digits, 24 of a
// prefix drawn from crypto/rand once per agent (96 bits) and 8 of a
// counter of the agent's runs. Two agents, in one process or in several,
// draw the same prefix with a probability of about n²/2⁹⁷ among n agents;
// an agent draws a new prefix when its counter wraps, after 2³² runs. It
// is guarded by the agent's runMu.
type runIDs struct {
	prefix [runIDLen - 8]byte
	n      uint32 // the next run's number; 0: draw a prefix first
}

// next writes a new run ID into dst.
func (g *runIDs) next(dst *[runIDLen]byte) {
	if g.n == 0 {
		var b [len(g.prefix) / 2]byte
		_, _ = rand.Read(b[:])
		hex.Encode(g.prefix[:], b[:])
	}
	n := g.n
	g.n++
	copy(dst[:], g.prefix[:])
	const digits = "0123456789abcdef"
	for i := runIDLen - 1; i >= len(g.prefix); i-- {
		dst[i] = digits[n&0xf]
		n >>= 4
	}
}

// runState is the bookkeeping of one Run or Resume in one allocation: the
// result, the run's context, the bytes of its ID, the scopes of its first
// model requests and of its first tool call (each used once: a scope is a
// context, which its callee may keep), its user message's part, and the
// slices its steps reuse. The result points into it, so it lives as long
// as the result (and as the history, which holds the user message part).
type runState struct {
	res    RunResult
	scope  runScope
	id     [runIDLen]byte
	models [2]modelScope
	nmodel int
	tool   toolScope
	ntool  bool    // tool was used
	user   [1]Part // the user message's content
	// toolParts is the content of the first tool message, while unused.
	toolParts [2]Part
	ntoolMsg  bool
	calls     []ToolCall // the step's tool calls, reused (not with a step runner)
	// results holds the step's results; reused, never kept: a pause and
	// a tool message copy what they keep.
	results []*ToolResult
	bufs    struct {
		calls   [2]ToolCall
		results [2]*ToolResult
	}
}

// newRunID fills st.id with a new run ID and returns it as a string that
// shares st's bytes: they never change afterwards.
func (a *Agent) newRunID(st *runState) string {
	a.runIDs.next(&st.id)
	return unsafe.String(&st.id[0], len(st.id))
}

// modelScope returns a scope for a model request: one of the run's, while
// it has unused ones, else a new one.
func (st *runState) modelScope() *modelScope {
	if st != nil && st.nmodel < len(st.models) {
		st.nmodel++
		return &st.models[st.nmodel-1]
	}
	return new(modelScope)
}

// endRun forgets the run's bookkeeping at the end of Run or Resume.
func (a *Agent) endRun() { a.cur = nil }

// toolScope returns a zero scope for a tool call run alone: the run's the
// first time, then nil (the caller makes one).
func (st *runState) toolScope() *toolScope {
	if st == nil || st.ntool {
		return nil
	}
	st.ntool = true
	return &st.tool
}

// userMessage returns the user message of input, whose content is st's.
func (st *runState) userMessage(input string) Message {
	if st == nil {
		return UserMessage(input)
	}
	st.user[0] = Part{Type: PartText, Text: input}
	return Message{Role: RoleUser, Content: st.user[:1:1]}
}

// toolCalls returns the tool calls of m, like [Message.ToolCalls], in the
// run's reused slice when reuse is set (no step runner, whose steps point
// into the slice).
func (st *runState) toolCalls(m *Message, reuse bool) []ToolCall {
	var calls []ToolCall
	if st != nil && reuse {
		if st.calls == nil {
			st.calls = st.bufs.calls[:0]
		}
		calls = st.calls[:0]
	}
	for i := range m.Content {
		if p := &m.Content[i]; p.Type == PartToolCall && p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	if st != nil && reuse {
		st.calls = calls
	}
	return calls
}

// resultSlice returns n nil results, in the run's reused slice.
func (st *runState) resultSlice(n int) []*ToolResult {
	if st == nil {
		return make([]*ToolResult, n)
	}
	if st.results == nil {
		st.results = st.bufs.results[:0]
	}
	st.results = slices.Grow(st.results[:0], n)[:n]
	clear(st.results)
	return st.results
}

// toolMessage returns the tool message of results, like toolMessage; the
// run's first, if it fits, has its content in st.
func (st *runState) toolMessage(results []*ToolResult) Message {
	if st == nil || st.ntoolMsg || len(results) > len(st.toolParts) {
		return toolMessage(results)
	}
	st.ntoolMsg = true
	m := Message{Role: RoleTool, Content: st.toolParts[:len(results):len(results)]}
	for i, r := range results {
		m.Content[i] = Part{Type: PartToolResult, ToolResult: r}
	}
	return m
}
