package harness

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"unsafe"
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
	h     hash.Hash
	buf   []byte
	chain []Hash // chain[i] is the chained hash of messages[:i+1]
	prev  PrefixKey
	valid bool
}

func (p *prefixHasher) reset() {
	p.chain = p.chain[:0]
	p.prev = PrefixKey{}
	p.valid = false
}

// compute fills req.PrefixKey.
func (p *prefixHasher) compute(req *ModelRequest) {
	if p.h == nil {
		p.h = sha256.New()
	}
	var k PrefixKey
	k.Model = p.sum(func() { p.str(req.Model) })
	k.Tools = p.sum(func() {
		p.int(len(req.Tools))
		for i := range req.Tools {
			t := &req.Tools[i]
			p.str(t.Name)
			p.str(t.Description)
			p.bytes(t.InputSchema)
		}
	})
	k.System = p.sum(func() { p.str(req.System) })

	n := len(req.Messages) - 1
	if n < 0 {
		n = 0
	}
	k.PrefixMessages = n
	// Recompute the chain for the messages: reuse the slice, hash each
	// message once per request. The chain is what lets a later request see
	// whether the earlier prefix still stands.
	p.chain = p.chain[:0]
	var prev Hash
	for i := 0; i < n; i++ {
		prev = p.sum(func() {
			p.h.Write(prev[:])
			p.message(&req.Messages[i])
		})
		p.chain = append(p.chain, prev)
	}
	k.Messages = prev
	k.Key = p.sum(func() {
		p.h.Write(k.Model[:])
		p.h.Write(k.Tools[:])
		p.h.Write(k.System[:])
		p.h.Write(k.Messages[:])
	})

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

func (p *prefixHasher) sum(write func()) (out Hash) {
	p.h.Reset()
	write()
	p.buf = p.h.Sum(p.buf[:0])
	copy(out[:], p.buf)
	return out
}

// The canonical encoding is length-prefixed, so no two different inputs
// share bytes.
func (p *prefixHasher) int(n int) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	p.h.Write(b[:])
}

func (p *prefixHasher) str(s string) {
	p.int(len(s))
	p.h.Write(stringBytes(s))
}

func (p *prefixHasher) bytes(b []byte) {
	p.int(len(b))
	p.h.Write(b)
}

func (p *prefixHasher) message(m *Message) {
	p.str(string(m.Role))
	p.int(len(m.Content))
	for i := range m.Content {
		c := &m.Content[i]
		p.str(string(c.Type))
		p.str(c.Text)
		if tc := c.ToolCall; tc != nil {
			p.int(1)
			p.str(tc.ID)
			p.str(tc.Name)
			p.bytes(tc.Input)
		} else {
			p.int(0)
		}
		if tr := c.ToolResult; tr != nil {
			p.int(1)
			p.str(tr.CallID)
			p.str(tr.Name)
			p.str(tr.Content)
			if tr.IsError {
				p.int(1)
			} else {
				p.int(0)
			}
		} else {
			p.int(0)
		}
	}
}

// stringBytes views s as bytes without a copy, for hashing only: the
// hasher does not keep the slice.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
