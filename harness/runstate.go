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
// result, the run's context, the scopes of its first
// model requests and of its first tool call (each used once: a scope is a
// context, which its callee may keep), and the slices its steps reuse.
// The result points into it, so it lives as long as the result; the
// history never points into it (it would keep the run's contexts alive).
type runState struct {
	res    RunResult
	scope  runScope
	models [2]modelScope
	nmodel int
	tool   toolScope
	ntool  bool       // tool was used
	calls  []ToolCall // the step's tool calls, reused (not with a step runner)
	// results holds the step's results; reused, never kept: a pause and
	// a tool message copy what they keep.
	results []*ToolResult
	bufs    struct {
		calls   [2]ToolCall
		results [2]*ToolResult
	}
}

// idChunk is how many run IDs' bytes the agent allocates at once.
const idChunk = 8

// newRunID returns a new run ID. Its bytes are carved from a chunk of the
// agent's (see idChunk), not from the run's bookkeeping: whoever keeps a
// run ID (a journal, a pending run) keeps only the chunk alive, which has
// no pointers. The bytes never change once written. Only the run
// goroutine (holding runMu) calls it.
func (a *Agent) newRunID() string {
	if len(a.freeIDs) < runIDLen {
		a.freeIDs = make([]byte, runIDLen*idChunk)
	}
	b := (*[runIDLen]byte)(a.freeIDs[:runIDLen])
	a.freeIDs = a.freeIDs[runIDLen:]
	a.runIDs.next(b)
	return unsafe.String(&b[0], runIDLen)
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

// partChunk is how many parts the agent allocates at once for the
// messages the engine builds (user messages of Run, tool messages).
const partChunk = 8

// newParts returns n zero parts for a message's content, carved from the
// agent's current chunk (see partChunk), with no room to grow: messages
// are immutable once in the history, so parts of several messages, of one
// conversation or of one before a Reset, can share a chunk. A chunk is
// kept alive by any of its messages, which bounds what a Reset leaves
// alive to one chunk. Only the run goroutine (holding runMu) calls it.
func (a *Agent) newParts(n int) []Part {
	if n > partChunk/2 {
		return make([]Part, n)
	}
	if len(a.freeParts) < n {
		a.freeParts = make([]Part, partChunk)
	}
	p := a.freeParts[:n:n]
	a.freeParts = a.freeParts[n:]
	return p
}

// userMessage returns the user message of input (UserMessage, with its
// content from newParts).
func (a *Agent) userMessage(input string) Message {
	c := a.newParts(1)
	c[0] = Part{Type: PartText, Text: input}
	return Message{Role: RoleUser, Content: c}
}
