package flight

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/jsonenc"
	"github.com/harnessx/harnessx/internal/partref"
)

// PartsDir is the directory, in a bundle and in a recording, that holds
// the bytes of media parts: one file a part, named by the SHA-256 of its
// bytes (parts/sha256-<hex>, see [PartMemberName]), stored once however
// many times the part was sent.
const PartsDir = "parts/"

// PartRef names a media part by reference in an [Event]: its kind, MIME
// type, name and size, and URI, "artifact:sha256:<hex>", the SHA-256 of
// its bytes (the reference the tracing extension records in spans too).
type PartRef struct {
	// Type is the part's type: "image", "document" or "audio".
	Type string `json:"type"`
	// MIME is the MIME type the part claims, such as "image/png".
	MIME string `json:"mime_type,omitempty"`
	// Name is the part's optional name (a file name), redacted.
	Name string `json:"name,omitempty"`
	// URI is the reference: "artifact:sha256:<64 hex digits>".
	URI string `json:"uri"`
	// Size is the number of bytes.
	Size int64 `json:"size,omitempty"`
}

// PartMemberName returns the name of the file, in a bundle or in a
// recording, that holds the bytes whose SHA-256 is sum:
// "parts/sha256-<hex>".
func PartMemberName(sum [32]byte) string { return PartsDir + partref.FileName(sum) }

// ParsePartMemberName returns the digest a part member's name says, and
// false when name is not of the form parts/sha256-<64 lowercase hex
// digits> (see [PartMemberName]).
func ParsePartMemberName(name string) ([32]byte, bool) {
	h, ok := strings.CutPrefix(name, PartsDir+"sha256-")
	if !ok {
		return [32]byte{}, false
	}
	return partref.Parse(partref.Scheme + ":sha256:" + h)
}

// appendParts appends the "parts" member of an event: the same bytes as
// encoding/json gives for []PartRef (without HTML escaping).
func appendParts(dst []byte, parts []PartRef, red *Redactor) []byte {
	dst = append(dst, `,"parts":[`...)
	for i := range parts {
		p := &parts[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":`...)
		dst = jsonenc.AppendString(dst, p.Type)
		dst = appendStr(dst, `,"mime_type":`, p.MIME, red)
		dst = appendStr(dst, `,"name":`, p.Name, red)
		dst = append(dst, `,"uri":`...)
		dst = jsonenc.AppendString(dst, p.URI)
		dst = appendInt(dst, `,"size":`, p.Size)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// scanRefs calls fn with the digest of every well-formed part reference
// in data, in order, repeats included. A reference is found wherever it
// stands: in an event's parts, inside a span attribute's JSON string, in a
// session snapshot.
func scanRefs(data []byte, fn func(sum [32]byte)) {
	const prefix = partref.Scheme + ":sha256:"
	const n = len(prefix) + 64
	for {
		i := bytes.Index(data, []byte(prefix))
		if i < 0 {
			return
		}
		data = data[i:]
		if len(data) < n {
			return
		}
		if len(data) == n || !isHexDigit(data[n]) {
			if sum, ok := partref.Parse(string(data[:n])); ok {
				fn(sum)
				data = data[n:]
				continue
			}
		}
		data = data[len(prefix):]
	}
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// refOf returns the reference of an inline media part, and false for a
// part without bytes (a URI, a provider file ID) or without media.
func refOf(p *harness.Part) (PartRef, [32]byte, bool) {
	m := p.Media
	if m == nil || len(m.Data) == 0 {
		return PartRef{}, [32]byte{}, false
	}
	sum := [32]byte(m.SHA256())
	return PartRef{Type: string(p.Type), MIME: m.MIME, Name: m.Name, URI: partref.URI(sum), Size: int64(len(m.Data))}, sum, true
}

// partTracker is the recorder's hot-path state about media parts: which
// parts the events of the current run named already and, with
// WithIncludeArtifacts, which parts have their bytes stored or queued for
// the snapshotter, and when each was last named (the store deletes the
// least recently named first). Guarded by mu.
type partTracker struct {
	mu     sync.Mutex
	run    string
	listed map[[32]byte]struct{} // named by an event of run
	tick   uint64
	used   map[[32]byte]uint64 // stored or queued: the tick it was last named
	queue  []pendingPart
	queued int64 // bytes in queue
}

// pendingPart is a part whose bytes wait for the snapshotter. data is the
// part's own slice (Media is immutable once in a message), not a copy.
type pendingPart struct {
	sum  [32]byte
	data []byte
}

// noteParts appends to e.Parts the references of the inline media parts
// of parts (with those of the tool results among them) that no earlier
// event of the run named, and with WithIncludeArtifacts queues the bytes
// of parts not stored yet. all names every part, named before or not (a
// tool result, a response). It never blocks on the disk.
func (x *Extension) noteParts(e *Event, runID string, all bool, parts ...[]harness.Part) {
	t := &x.parts
	locked := false
	for _, ps := range parts {
		for i := range ps {
			p := &ps[i]
			if p.ToolResult != nil && len(p.ToolResult.Parts) > 0 {
				if !locked {
					t.mu.Lock()
					locked = true
				}
				for j := range p.ToolResult.Parts {
					x.notePartLocked(e, runID, all, &p.ToolResult.Parts[j])
				}
			}
			if p.Media == nil || len(p.Media.Data) == 0 {
				continue
			}
			if !locked {
				t.mu.Lock()
				locked = true
			}
			x.notePartLocked(e, runID, all, p)
		}
	}
	if locked {
		t.mu.Unlock()
	}
}

func (x *Extension) notePartLocked(e *Event, runID string, all bool, p *harness.Part) {
	ref, sum, ok := refOf(p)
	if !ok {
		return
	}
	t := &x.parts
	if t.run != runID || t.listed == nil {
		t.run = runID
		if t.listed == nil {
			t.listed = map[[32]byte]struct{}{}
		}
		clear(t.listed)
	}
	if _, seen := t.listed[sum]; seen && !all {
		return
	}
	if !slicesContainsURI(e.Parts, ref.URI) {
		e.Parts = append(e.Parts, ref)
	}
	t.listed[sum] = struct{}{}
	if x.cfg.includeArtifacts {
		x.queuePartLocked(sum, p.Media.Data)
	}
}

func slicesContainsURI(refs []PartRef, uri string) bool {
	for i := range refs {
		if refs[i].URI == uri {
			return true
		}
	}
	return false
}

// queuePartLocked marks the part sum as named now and queues its bytes
// for the snapshotter unless they are stored or queued already. Bytes
// that would take the queue past the recording's artifact limit are not
// queued: counted in Stats.PartsSkipped. x.parts.mu must be held.
func (x *Extension) queuePartLocked(sum [32]byte, data []byte) {
	t := &x.parts
	t.tick++
	if t.used == nil {
		t.used = map[[32]byte]uint64{}
	}
	if _, ok := t.used[sum]; ok {
		t.used[sum] = t.tick
		return
	}
	if t.queued+int64(len(data)) > x.cfg.artifactBytes || len(t.used) >= maxParts {
		x.partSkip.Add(1)
		return
	}
	t.used[sum] = t.tick
	t.queue = append(t.queue, pendingPart{sum: sum, data: data})
	t.queued += int64(len(data))
	x.partsDirty.Store(true)
}

// maxParts bounds the parts a recorder keeps track of.
const maxParts = 1 << 16

// sumCache remembers the SHA-256 and size of base64 strings met in
// session snapshots, keyed by a fast seeded hash, so that a snapshot
// decodes and hashes only the parts it had not met. It is safe for
// concurrent use.
type sumCache struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64]sumEntry
}

type sumEntry struct {
	n    int // length of the base64 text
	sum  [32]byte
	size int64
}

const maxSumCache = 4096

func newSumCache() *sumCache { return &sumCache{seed: maphash.MakeSeed(), m: map[uint64]sumEntry{}} }

func (c *sumCache) get(s string) (sumEntry, uint64, bool) {
	if c == nil {
		return sumEntry{}, 0, false
	}
	k := maphash.String(c.seed, s)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e, k, ok && e.n == len(s)
}

func (c *sumCache) put(k uint64, e sumEntry) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSumCache {
		clear(c.m)
	}
	c.m[k] = e
}

// sessionRefs returns the session snapshot data (JSON of
// Agent.SaveSession) with the bytes of every inline media part of its
// messages and pending results replaced by the part's reference: "data"
// (base64) gives way to "uri" ("artifact:sha256:<hex>") and "size". found,
// if set, receives the bytes of each part decoded here (not those the
// cache knew). A snapshot without inline bytes is returned as it is.
func sessionRefs(data []byte, cache *sumCache, found func(sum [32]byte, b []byte)) ([]byte, error) {
	if !bytes.Contains(data, []byte(`"media"`)) || !bytes.Contains(data, []byte(`"data"`)) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return data, nil
	}
	changed := false
	var part func(p any)
	part = func(p any) {
		pm, ok := p.(map[string]any)
		if !ok {
			return
		}
		if m, ok := pm["media"].(map[string]any); ok && mediaRef(m, cache, found) {
			changed = true
		}
		if tr, ok := pm["tool_result"].(map[string]any); ok {
			each(tr["parts"], part)
		}
	}
	each(top["messages"], func(m any) {
		if mm, ok := m.(map[string]any); ok {
			each(mm["content"], part)
		}
	})
	if p, ok := top["pending"].(map[string]any); ok {
		each(p["results"], func(r any) {
			if rm, ok := r.(map[string]any); ok {
				each(rm["parts"], part)
			}
		})
	}
	if !changed {
		return data, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func each(v any, fn func(any)) {
	if a, ok := v.([]any); ok {
		for _, e := range a {
			fn(e)
		}
	}
}

// mediaRef replaces the inline bytes of one media object by their
// reference; it reports whether it changed m. Text that is not base64 is
// dropped, with its length in "data_omitted": never copied as it is.
func mediaRef(m map[string]any, cache *sumCache, found func(sum [32]byte, b []byte)) bool {
	s, ok := m["data"].(string)
	if !ok || s == "" {
		return false
	}
	delete(m, "data")
	e, k, hit := cache.get(s)
	if !hit {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			m["data_omitted"] = json.Number(strconv.Itoa(len(s)))
			return true
		}
		e = sumEntry{n: len(s), sum: sha256.Sum256(raw), size: int64(len(raw))}
		cache.put(k, e)
		if found != nil {
			found(e.sum, raw)
		}
	}
	m["uri"] = partref.URI(e.sum)
	m["size"] = json.Number(strconv.FormatInt(e.size, 10))
	return true
}

// hexSum32 returns the lowercase hex of sum.
func hexSum32(sum [32]byte) string { return hex.EncodeToString(sum[:]) }
