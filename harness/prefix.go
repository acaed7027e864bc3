package harness

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Hash is a SHA-256 digest.
type Hash [sha256.Size]byte

// String returns the digest in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero digest (no value).
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText encodes h as hex.
func (h Hash) MarshalText() ([]byte, error) {
	b := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(b, h[:])
	return b, nil
}

// UnmarshalText decodes hex.
func (h *Hash) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(h) {
		return errInvalidHash
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// The names of the parts of a prefix key, in the order they are hashed: the
// order in which providers lay out a prompt (tools, then system, then
// messages), after the model, which selects the cache.
const (
	PrefixPartModel    = "model"
	PrefixPartTools    = "tools"
	PrefixPartSystem   = "system"
	PrefixPartMessages = "messages"
)

// PrefixKey identifies the cacheable prefix of a [ModelRequest]: the model,
// the tool definitions, the system prompt and the stable message prefix
// (every message but the last, which is the new input). Two requests with
// the same Key can share a provider's prompt cache.
//
// The engine keeps the per-part hashes so that a change of key can name the
// part that changed: Changed lists the parts that differ from the previous
// request of the same session. The messages part counts as changed only
// when the earlier prefix is no longer a prefix of the new one: growth of
// the conversation keeps the cache and is not reported.
type PrefixKey struct {
	// Key is the SHA-256 over all parts.
	Key Hash
	// Model, Tools, System and Messages are the per-part hashes. Messages is
	// a chained hash over the stable prefix, message by message.
	Model, Tools, System, Messages Hash
	// PrefixMessages is how many messages the stable prefix holds.
	PrefixMessages int
	// Changed names the parts that broke the cache since the previous
	// request of this session (PrefixPart* constants, in hash order); empty
	// for the first request and when the cache holds.
	Changed []string
}

// Parts returns the per-part hashes by name, in hash order.
func (k PrefixKey) Parts() [4]struct {
	Name string
	Hash Hash
} {
	return [4]struct {
		Name string
		Hash Hash
	}{
		{PrefixPartModel, k.Model},
		{PrefixPartTools, k.Tools},
		{PrefixPartSystem, k.System},
		{PrefixPartMessages, k.Messages},
	}
}

// prefixHasher computes prefix keys and remembers the previous one, with the
// chain hashes of the message prefix, so that it can tell growth from a
// change. It is owned by one agent and guarded by the agent's run lock.
type prefixHasher struct {
	enc   []byte  // canonical encoding of the value being hashed, reused
	chain []Hash  // chain[i] is the chained hash of messages[:i+1]
	ids   []msgID // ids[i] identifies the message chain[i] ends with; it keeps it alive, so no address is reused

	// The last hashed model, system prompt and tool definitions, with
	// their hashes: they rarely change between requests.
	model, system           string
	tools                   []ToolDefinition
	hModel, hSystem, hTools Hash
	partsValid              bool

	prev  PrefixKey // the previous request's key
	valid bool      // prev is set
}

// msgID identifies a message value without reading it.
type msgID struct {
	role    Role
	content *Part
	n       int
}

func identify(m *Message) msgID {
	id := msgID{role: m.Role, n: len(m.Content)}
	if len(m.Content) > 0 {
		id.content = &m.Content[0]
	}
	return id
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// reset forgets the previous request (a new conversation). The part
// caches stay: they depend on values, not on the conversation.
func (p *prefixHasher) reset() {
	p.chain = p.chain[:0]
	clear(p.ids)
	p.ids = p.ids[:0]
	p.prev = PrefixKey{}
	p.valid = false
}

// compute fills req.PrefixKey.
func (p *prefixHasher) compute(req *ModelRequest) {
	var k PrefixKey
	// Tool definitions are compared by identity: the engine shares one
	// immutable slice until a registration changes.
	if !p.partsValid || req.Model != p.model {
		p.enc = appendStr(p.enc[:0], req.Model)
		p.hModel, p.model = sha256.Sum256(p.enc), req.Model
	}
	if !p.partsValid || !sameSlice(req.Tools, p.tools) {
		p.enc = appendInt(p.enc[:0], len(req.Tools))
		for i := range req.Tools {
			t := &req.Tools[i]
			p.enc = appendStr(p.enc, t.Name)
			p.enc = appendStr(p.enc, t.Description)
			p.enc = appendStr(p.enc, string(t.InputSchema))
		}
		p.hTools, p.tools = sha256.Sum256(p.enc), req.Tools
	}
	if !p.partsValid || req.System != p.system {
		p.enc = appendStr(p.enc[:0], req.System)
		p.hSystem, p.system = sha256.Sum256(p.enc), req.System
	}
	p.partsValid = true
	k.Model, k.Tools, k.System = p.hModel, p.hTools, p.hSystem

	n := max(len(req.Messages)-1, 0)
	k.PrefixMessages = n
	// The chain is what lets a later request see whether the earlier
	// prefix still stands. Messages are immutable once in the history, so
	// a link is reused while the message at its place is the same value
	// (by identity of its content); from the first new message on, the
	// chain is hashed anew.
	var prev Hash
	reuse := true
	for i := 0; i < n; i++ {
		m := &req.Messages[i]
		id := identify(m)
		if reuse && i < len(p.chain) && p.ids[i] == id {
			prev = p.chain[i]
			continue
		}
		reuse = false
		p.enc = appendMessage(append(p.enc[:0], prev[:]...), m)
		prev = sha256.Sum256(p.enc)
		p.chain = append(p.chain[:i], prev)
		p.ids = append(p.ids[:i], id)
	}
	clear(p.ids[n:])
	p.chain, p.ids = p.chain[:n], p.ids[:n]
	k.Messages = prev

	p.enc = append(p.enc[:0], k.Model[:]...)
	p.enc = append(p.enc, k.Tools[:]...)
	p.enc = append(p.enc, k.System[:]...)
	p.enc = append(p.enc, k.Messages[:]...)
	k.Key = sha256.Sum256(p.enc)

	if p.valid && p.prev.Key != k.Key {
		if p.prev.Model != k.Model {
			k.Changed = append(k.Changed, PrefixPartModel)
		}
		if p.prev.Tools != k.Tools {
			k.Changed = append(k.Changed, PrefixPartTools)
		}
		if p.prev.System != k.System {
			k.Changed = append(k.Changed, PrefixPartSystem)
		}
		if pm := p.prev.PrefixMessages; pm > n || (pm > 0 && p.chain[pm-1] != p.prev.Messages) {
			k.Changed = append(k.Changed, PrefixPartMessages)
		}
	}
	p.prev = k
	p.prev.Changed = nil
	p.valid = true
	req.PrefixKey = k
}

// The canonical encoding is length-prefixed, so no two different values
// share bytes.
func appendInt(b []byte, n int) []byte { return binary.BigEndian.AppendUint64(b, uint64(n)) }

func appendStr(b []byte, s string) []byte { return append(appendInt(b, len(s)), s...) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendMessage(b []byte, m *Message) []byte {
	b = appendStr(b, string(m.Role))
	b = appendInt(b, len(m.Content))
	for i := range m.Content {
		c := &m.Content[i]
		b = appendStr(b, string(c.Type))
		b = appendStr(b, c.Text)
		b = appendStr(b, string(c.ProviderData))
		b = appendBool(b, c.ToolCall != nil)
		if tc := c.ToolCall; tc != nil {
			b = appendStr(b, tc.ID)
			b = appendStr(b, tc.Name)
			b = appendStr(b, string(tc.Input))
		}
		b = appendBool(b, c.ToolResult != nil)
		if tr := c.ToolResult; tr != nil {
			b = appendStr(b, tr.CallID)
			b = appendStr(b, tr.Name)
			b = appendStr(b, tr.Content)
			b = appendBool(b, tr.IsError)
		}
	}
	return b
}
