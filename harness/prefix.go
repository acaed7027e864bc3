package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
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
	// First marks the session's first request since it began or was
	// reset: there is no previous request to compare with, so Changed is
	// empty whatever the provider's cache holds.
	First bool
	// Changed names the parts that broke the cache since the previous
	// request of this session (PrefixPart* constants, in hash order); empty
	// for the first request and when the cache holds.
	Changed []string
	// Break locates the first difference in the message prefix when
	// Changed includes "messages": which message and part changed, with
	// the part's hashes before and after, so that a changed image shows as
	// the break. Nil otherwise.
	Break *PrefixBreak
}

// PrefixBreak locates the first change of a message prefix (see
// [PrefixKey.Break]).
type PrefixBreak struct {
	// Message is the index of the first message of the previous prefix
	// that is not the same in the new request.
	Message int
	// Part is the index of its first part that differs; -1 when the
	// message as a whole does (its role changed, or it is gone).
	Part int
	// ResultPart is the index in [ToolResult.Parts] when the difference is
	// inside a tool result's parts; -1 otherwise.
	ResultPart int
	// Type is the type of the part that differs (its new type when it has
	// one, else its old).
	Type PartType
	// Old and New identify the part before and after: for a media part the
	// SHA-256 of its bytes ([Media.SHA256]; zero for a reference, whose
	// URI or file ID changed), for other parts the SHA-256 of its
	// canonical encoding; zero where there is no part (one was added or
	// removed).
	Old, New Hash
}

// String describes the break as "messages[i].content[j]" (with
// ".parts[k]" inside a tool result) and the part's type.
func (b *PrefixBreak) String() string {
	s := "messages[" + strconv.Itoa(b.Message) + "]"
	if b.Part >= 0 {
		s += ".content[" + strconv.Itoa(b.Part) + "]"
	}
	if b.ResultPart >= 0 {
		s += ".parts[" + strconv.Itoa(b.ResultPart) + "]"
	}
	if b.Type != "" {
		s += " (" + string(b.Type) + ")"
	}
	return s
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

	// The links of the previous chain from the first one a request does
	// not reuse, kept (in reused buffers) to locate a break.
	oldChain []Hash
	oldIDs   []msgID

	// The last hashed model, system prompt and tool definitions, with
	// their hashes: they rarely change between requests.
	model, system           string
	tools                   []ToolDefinition
	hModel, hSystem, hTools Hash
	partsValid              bool

	prev  PrefixKey // the previous request's key
	valid bool      // prev is set
}

// msgID identifies a message value without reading it; it holds the
// message's content, to tell which part changed.
type msgID struct {
	role    Role
	content []Part
}

func identify(m *Message) msgID { return msgID{role: m.Role, content: m.Content} }

func (id msgID) same(o msgID) bool { return id.role == o.role && sameSlice(id.content, o.content) }

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
	from := len(p.chain) // the first link not reused
	for i := 0; i < n; i++ {
		m := &req.Messages[i]
		id := identify(m)
		if reuse && i < len(p.chain) && p.ids[i].same(id) {
			prev = p.chain[i]
			continue
		}
		if reuse && i < len(p.chain) {
			from = i
			p.oldChain = append(p.oldChain[:0], p.chain[i:]...)
			p.oldIDs = append(p.oldIDs[:0], p.ids[i:]...)
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

	k.First = !p.valid
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
			k.Break = p.locate(req.Messages[:n], from, min(pm, from+len(p.oldChain)))
		}
	}
	if len(p.oldIDs) > 0 {
		clear(p.oldIDs) // keep no old message alive
		p.oldIDs, p.oldChain = p.oldIDs[:0], p.oldChain[:0]
	}
	if c := max(cap(p.ids), cap(p.oldIDs)); c > 256 && c > 4*n {
		// Room a long conversation made, kept for a short one (after a
		// reset): the collector would scan it at every cycle.
		p.ids = append(make([]msgID, 0, n), p.ids...)
		p.chain = append(make([]Hash, 0, n), p.chain...)
		p.oldIDs, p.oldChain = nil, nil
	}
	p.prev = k
	p.prev.Changed, p.prev.Break = nil, nil
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
		b = appendPart(b, &m.Content[i])
	}
	return b
}

// appendPart encodes a part. A media part is covered by the SHA-256 of its
// bytes (computed once per Media), not by the bytes: a 5 MiB image adds 32
// bytes to the encoding. Fields that came after the first version are
// encoded so that a text-only conversation keeps its key: media fields
// follow only a media type, and a tool result's parts are announced by
// bit 1 of its is_error byte.
func appendPart(b []byte, c *Part) []byte {
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
		flags := byte(0)
		if tr.IsError {
			flags |= 1
		}
		if len(tr.Parts) > 0 {
			flags |= 2
		}
		b = append(b, flags)
		if len(tr.Parts) > 0 {
			b = appendInt(b, len(tr.Parts))
			for j := range tr.Parts {
				b = appendPart(b, &tr.Parts[j])
			}
		}
	}
	if c.IsMedia() {
		b = appendBool(b, c.Media != nil)
		if md := c.Media; md != nil {
			b = appendStr(b, md.MIME)
			b = appendStr(b, md.Name)
			b = appendStr(b, md.URI)
			b = appendStr(b, md.FileID)
			b = appendInt(b, len(md.Data))
			h := md.SHA256()
			b = append(b, h[:]...)
		}
	}
	return b
}

// partHash identifies a part for a [PrefixBreak].
func (p *prefixHasher) partHash(c *Part) Hash {
	if c.Media != nil && len(c.Media.Data) > 0 {
		return c.Media.SHA256()
	}
	if c.Media != nil {
		return Hash{}
	}
	p.enc = appendPart(p.enc[:0], c)
	return sha256.Sum256(p.enc)
}

// locate finds the first difference between the previous prefix, whose
// links from index from on are in oldChain and oldIDs, and msgs. Links
// before from were reused and are equal; end bounds the previous prefix.
func (p *prefixHasher) locate(msgs []Message, from, end int) *PrefixBreak {
	for i := from; i < end; i++ {
		if i < len(p.chain) && p.chain[i] == p.oldChain[i-from] {
			continue
		}
		old := p.oldIDs[i-from]
		br := &PrefixBreak{Message: i, Part: -1, ResultPart: -1}
		if i >= len(msgs) || msgs[i].Role != old.role {
			return br
		}
		cur := msgs[i].Content
		for j := 0; j < max(len(cur), len(old.content)); j++ {
			var a, c *Part
			if j < len(old.content) {
				a = &old.content[j]
			}
			if j < len(cur) {
				c = &cur[j]
			}
			if a != nil && c != nil && p.samePart(a, c) {
				continue
			}
			br.Part = j
			p.describe(br, a, c)
			return br
		}
		return br
	}
	return nil
}

// samePart reports whether two parts encode the same.
func (p *prefixHasher) samePart(a, c *Part) bool {
	p.enc = appendPart(p.enc[:0], a)
	n := len(p.enc)
	p.enc = appendPart(p.enc, c)
	return bytes.Equal(p.enc[:n], p.enc[n:])
}

// describe fills the type and hashes of a break at old part a and new part
// c (either may be nil), looking inside tool results' parts.
func (p *prefixHasher) describe(br *PrefixBreak, a, c *Part) {
	if a != nil && c != nil && a.ToolResult != nil && c.ToolResult != nil {
		ar, cr := a.ToolResult, c.ToolResult
		if ar.CallID == cr.CallID && ar.Name == cr.Name && ar.Content == cr.Content && ar.IsError == cr.IsError {
			for k := 0; k < max(len(ar.Parts), len(cr.Parts)); k++ {
				var x, y *Part
				if k < len(ar.Parts) {
					x = &ar.Parts[k]
				}
				if k < len(cr.Parts) {
					y = &cr.Parts[k]
				}
				if x != nil && y != nil && p.samePart(x, y) {
					continue
				}
				br.ResultPart = k
				p.describe(br, x, y)
				return
			}
		}
	}
	if c != nil {
		br.Type = c.Type
		br.New = p.partHash(c)
	} else if a != nil {
		br.Type = a.Type
	}
	if a != nil {
		br.Old = p.partHash(a)
	}
}
