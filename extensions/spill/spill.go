package spill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/redact"
)

// Defaults of the options.
const (
	// DefaultThreshold is the result size, in bytes, above which a result
	// is spilled.
	DefaultThreshold = 32_000
	// DefaultPreviewBytes is the size of the head and of the tail preview
	// in an envelope.
	DefaultPreviewBytes = 1000
	// DefaultMaxOutput caps what one read_result call returns to the
	// model, errors included.
	DefaultMaxOutput = 16 << 10
	// ToolName is the name of the tool the extension registers.
	ToolName = "read_result"
	// DefaultPartThreshold is the size, in bytes, of a tool result's media
	// part above which the part is stored and sent by URL, when the store
	// and the provider allow it (see WithPartThreshold): 256 KiB.
	DefaultPartThreshold = 256 << 10
	// DefaultPartURLExpiry is how long the URL of a stored part works: 24
	// hours.
	DefaultPartURLExpiry = 24 * time.Hour
)

// Option configures an [Extension].
type Option func(*config)

// config holds the settings. Defaults:
//   - threshold DefaultThreshold (32,000 bytes);
//   - a fresh temporary directory (os.MkdirTemp) created at the first
//     spill and removed at Close, except results saved in a session;
//   - previews of DefaultPreviewBytes each (head and tail);
//   - read_result output capped at DefaultMaxOutput (16 KiB);
//   - SHA-256 verified on the first read and whenever the file changed;
//   - media parts over DefaultPartThreshold (256 KiB) sent by a URL valid
//     for DefaultPartURLExpiry (24 h) when the store is a [URLer] and the
//     provider takes the part by URL; inline otherwise.
type config struct {
	threshold   int
	partMin     int
	partExpiry  time.Duration
	store       Store
	dir         string
	tempParent  string
	retain      bool
	preview     int
	maxOutput   int
	verifyEvery bool
	logger      *slog.Logger
}

// WithThreshold sets the size in bytes above which a result is spilled.
// Values below 1 keep the default.
func WithThreshold(n int) Option { return func(c *config) { c.threshold = n } }

// WithPartThreshold sets the size in bytes above which a media part of a
// tool result (an image, a document, audio held inline) is stored and
// sent to the provider by URL instead of inline (a claim check), when the
// store is a [URLer] and the provider takes such a part by URL
// (harness.Agent.AcceptsURL). 0 keeps the default, [DefaultPartThreshold];
// a negative n sends every part inline.
func WithPartThreshold(n int) Option { return func(c *config) { c.partMin = n } }

// WithPartURLExpiry sets how long the URL of a stored part must work
// (default [DefaultPartURLExpiry], 24 hours; a store may cap it: S3
// presigned URLs last at most 7 days). Every model request of the
// conversation sends the URL again, so a conversation continued after it
// expired fails at the provider. Values of 0 or less keep the default.
func WithPartURLExpiry(d time.Duration) Option { return func(c *config) { c.partExpiry = d } }

// WithStore stores results in s, which the caller owns: nothing in it is
// deleted and it is not closed at Close. Session state records results by
// id; a store that is a directory (has a Dir() string method) also records
// its location.
func WithStore(s Store) Option { return func(c *config) { c.store = s } }

// WithDir stores results as files in dir (created if needed), which the
// caller owns: the files are kept at Close. This is the artifact binding
// for results that must outlive the agent.
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithTempParent makes the default temporary store directory inside parent
// instead of os.TempDir().
func WithTempParent(parent string) Option { return func(c *config) { c.tempParent = parent } }

// WithRetain keeps the default temporary directory and every result in it
// at Close.
func WithRetain(on bool) Option { return func(c *config) { c.retain = on } }

// WithPreviewBytes sets the size of the head and of the tail previews.
func WithPreviewBytes(n int) Option { return func(c *config) { c.preview = n } }

// WithMaxOutput caps the text one read_result call returns, head, notes
// and errors included; longer output is cut with a note saying how to ask
// for the rest. Values of 0 or less keep the default; the minimum is 1024.
func WithMaxOutput(n int) Option { return func(c *config) { c.maxOutput = n } }

// WithVerifyEveryRead makes every read hash the whole stored result before
// serving it, instead of only when the file changed since the last check.
func WithVerifyEveryRead(on bool) Option { return func(c *config) { c.verifyEvery = on } }

// WithLogger sets the logger; default the agent's.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Meta describes a stored result.
type Meta struct {
	ID     string `json:"id"`
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Size   int64  `json:"size"`
	Lines  int64  `json:"lines"`
	Type   Type   `json:"type"`
	SHA256 string `json:"sha256"`
	// IsError is true for a spilled error result.
	IsError bool      `json:"is_error,omitempty"`
	Created time.Time `json:"created"`
}

// Result is a spilled result: its metadata and the envelope that the
// model receives instead of the content.
type Result struct {
	Meta
	Envelope string
}

// Extension is the spill extension. Build it with [New]; it is a
// [harness.Extension] named "spill". Its methods are safe for concurrent
// use.
type Extension struct {
	cfg config

	// searchBufs recycles the search buffers (searchChunk+keepMax bytes):
	// fresh megabyte buffers cost page faults on every search.
	searchBufs sync.Pool

	stats counters

	mu       sync.Mutex
	logger   *slog.Logger
	agent    *harness.Agent       // set at Install: whose provider is asked about URLs
	store    Store                // nil until the first spill, or the caller's
	own      *DirStore            // the store the extension created (temp or WithDir)
	tempDir  string               // the temporary directory, when own is temporary
	idx      resultIndex          // the stored results
	restored map[string]*DirStore // read-only stores of loaded sessions, by dir
	saved    map[string]bool
	closed   bool
	// version counts the changes of results (StateVersion); guarded by mu.
	version uint64
}

// entry is one stored result.
type entry struct {
	meta     Meta
	store    Store
	dir      string  // the store's directory, if it is one
	verified string  // stamp of the last verified version
	lines    []int64 // line index at searchChunk granularity (lineIndex); nil until known
	missing  string  // why a loaded result cannot be read, if it cannot
}

var (
	_ harness.Extension      = (*Extension)(nil)
	_ harness.TearDowner     = (*Extension)(nil)
	_ harness.SessionSaver   = (*Extension)(nil)
	_ harness.SessionLoader  = (*Extension)(nil)
	_ harness.ArtifactSource = (*Extension)(nil)
)

// New returns a spill extension. Use a fresh one for each agent.
func New(opts ...Option) *Extension {
	e := &Extension{saved: map[string]bool{}, restored: map[string]*DirStore{}}
	e.searchBufs.New = func() any {
		b := make([]byte, searchBuffer)
		return &b
	}
	for _, o := range opts {
		o(&e.cfg)
	}
	c := &e.cfg
	if c.threshold < 1 {
		c.threshold = DefaultThreshold
	}
	if c.preview < 1 {
		c.preview = DefaultPreviewBytes
	}
	if c.partMin == 0 {
		c.partMin = DefaultPartThreshold
	}
	if c.partExpiry <= 0 {
		c.partExpiry = DefaultPartURLExpiry
	}
	switch {
	case c.maxOutput <= 0:
		c.maxOutput = DefaultMaxOutput
	case c.maxOutput < 1024:
		c.maxOutput = 1024
	}
	e.store = c.store
	e.logger = c.logger
	return e
}

// Name returns "spill".
func (e *Extension) Name() string { return "spill" }

// Install registers the read_result tool and the result middleware. It
// creates no files: the store directory is made at the first spill.
func (e *Extension) Install(ec *harness.ExtensionContext) error {
	e.mu.Lock()
	if e.logger == nil {
		e.logger = ec.Logger()
	}
	e.agent = ec.Agent()
	e.mu.Unlock()
	if _, err := ec.RegisterTool(e.tool()); err != nil {
		return err
	}
	if _, err := ec.AddMiddleware(resultMiddleware{e}); err != nil {
		return err
	}
	return nil
}

// resultMiddleware spills large tool results.
type resultMiddleware struct{ e *Extension }

// AfterToolExecution replaces a result larger than the threshold with an
// envelope. Error results are spilled too: a huge stack trace floods the
// context as much as a huge answer; the envelope keeps IsError. Results of
// read_result are never spilled (its output is capped). If storing fails,
// the result is cut to the threshold with a note naming the cause (see
// [cutResult]): a result of any size never reaches the model whole, and
// the failure is logged and counted in Stats. Large media parts are
// stored and sent by URL when they can be (see [Extension.claimParts]).
func (m resultMiddleware) AfterToolExecution(ctx context.Context, call *harness.ToolCall, r *harness.ToolResult) error {
	e := m.e
	if r == nil || r.Name == ToolName || call.Name == ToolName {
		return nil
	}
	if len(r.Parts) > 0 {
		e.claimParts(ctx, call, r)
	}
	if len(r.Content) <= e.cfg.threshold {
		return nil
	}
	res, err := e.spill(ctx, call.Name, call.ID, r.IsError, strings.NewReader(r.Content))
	if err != nil {
		e.stats.failures.Add(1)
		e.stats.failedBytes.Add(int64(len(r.Content)))
		// A store's error may quote a URL with its password.
		cause := redact.Builtin().String(err.Error())
		cut, kept := cutResult(r.Content, e.cfg.threshold, cause)
		e.stats.cutBytes.Add(int64(len(r.Content) - kept))
		e.log().Warn("spill: could not store a large tool result; the model gets its head only",
			"tool", call.Name, "call_id", call.ID, "size", len(r.Content), "err", cause)
		r.Content = cut
		return nil
	}
	r.Content = res.Envelope
	return nil
}

// maxCutCause bounds the cause quoted in the note of a cut result.
const maxCutCause = 300

// cutResult returns the head of content that, followed by a note, fits
// in limit bytes (when the note alone fits), cut at a UTF-8 boundary, and
// the length of that head:
//
//	…head…
//	[spill: result cut at N of M bytes: the store failed: <cause>]
//
// The cause is quoted on one line, at most maxCutCause bytes of it.
func cutResult(content string, limit int, cause string) (string, int) {
	if len(cause) > maxCutCause {
		cause = strings.ToValidUTF8(cause[:maxCutCause], "") + "…"
	}
	cause = strings.ReplaceAll(cause, "\n", " ")
	// The note's length depends on N's digits: size it with M's, which
	// has at least as many.
	note := func(n int) string {
		return fmt.Sprintf("\n[spill: result cut at %d of %d bytes: the store failed: %s]", n, len(content), cause)
	}
	n := max(limit-len(note(len(content))), 0)
	for n > 0 && n < len(content) && !utf8.RuneStart(content[n]) {
		n--
	}
	return content[:n] + note(n), n
}

func (e *Extension) log() *slog.Logger {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.logger == nil {
		return slog.Default()
	}
	return e.logger
}

// Spill stores everything read from r as a result of tool and returns its
// metadata and envelope, streaming: memory stays bounded whatever the size.
// The middleware uses it for large tool results; a tool that produces a
// large output as a stream may call it directly and return the envelope.
func (e *Extension) Spill(ctx context.Context, tool string, r io.Reader) (Result, error) {
	return e.spill(ctx, tool, "", false, r)
}

func (e *Extension) spill(ctx context.Context, tool, callID string, isErr bool, r io.Reader) (Result, error) {
	st, dir, err := e.ensureStore()
	if err != nil {
		return Result{}, err
	}
	c := newCapture(e.cfg.preview + 4)
	var id string
	for attempt := 0; ; attempt++ {
		id = newID()
		_, err = st.Put(ctx, id, io.TeeReader(r, c))
		if errors.Is(err, ErrExists) && c.size == 0 && attempt < 3 {
			continue // an id collision before anything was read: try another id
		}
		break
	}
	if err != nil {
		return Result{}, err
	}
	typ, cols := detect(c.head, c.tailBytes(), c.size <= int64(len(c.head)))
	m := Meta{ID: id, Tool: tool, CallID: callID, Size: c.size, Lines: c.lineCount(), Type: typ,
		SHA256: c.sum(), IsError: isErr, Created: time.Now().UTC()}
	// The content was hashed as it was written: the version now in the
	// store counts as verified.
	verified := ""
	if info, err := st.Stat(ctx, id); err == nil {
		if info.Size != m.Size {
			_ = st.Delete(ctx, id)
			return Result{}, fmt.Errorf("spill: store kept %d of %d bytes of %s", info.Size, m.Size, id)
		}
		verified = info.Stamp
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = st.Delete(ctx, id)
		return Result{}, ErrClosed
	}
	e.idx.put(entry{meta: m, store: st, dir: dir, verified: verified, lines: c.lines.index})
	e.version++
	e.mu.Unlock()
	e.stats.spilled.Add(1)
	tail := c.tailBytes()
	return Result{Meta: m, Envelope: m.envelope(c.head, tail, e.cfg.preview, cols)}, nil
}

// oneChunk is the line index of every result shorter than a search chunk.
// Indexes are never written once made: results share it.
var oneChunk = []int64{0}

// ensureStore returns the store, creating the default one on first use.
func (e *Extension) ensureStore() (Store, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, "", ErrClosed
	}
	if e.store == nil {
		dir := e.cfg.dir
		if dir == "" {
			d, err := os.MkdirTemp(e.cfg.tempParent, "harnessx-spill-")
			if err != nil {
				return nil, "", fmt.Errorf("spill: creating the store directory: %w", err)
			}
			e.tempDir = d
			dir = d
		}
		ds, err := NewDirStore(dir)
		if err != nil {
			if e.tempDir != "" {
				_ = os.RemoveAll(e.tempDir)
				e.tempDir = ""
			}
			return nil, "", err
		}
		e.store, e.own = ds, ds
	}
	return e.store, storeDir(e.store), nil
}

// storeDir returns the directory of a store that has one.
func storeDir(s Store) string {
	if d, ok := s.(interface{ Dir() string }); ok {
		return d.Dir()
	}
	return ""
}

// Dir returns the directory of the extension's store, or "" when the store
// is not a directory or no result was spilled yet.
func (e *Extension) Dir() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.store == nil {
		return ""
	}
	return storeDir(e.store)
}

// Results lists the stored results, oldest first.
func (e *Extension) Results() []Meta {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Meta, 0, e.idx.len())
	e.idx.each(func(en *entry) bool {
		out = append(out, en.meta)
		return true
	})
	slices.SortFunc(out, func(a, b Meta) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Teardown releases the store. The default temporary directory is removed
// with every result in it, except results saved in a session (see
// OnSaveSession) or all of them with WithRetain; kept results stay in the
// directory, which is logged. A caller's store or directory (WithStore,
// WithDir) is never emptied. It is idempotent.
func (e *Extension) Teardown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	own, tempDir := e.own, e.tempDir
	saved := maps.Clone(e.saved)
	var ids []string
	e.idx.each(func(en *entry) bool {
		if sameStore(en.store, own) {
			ids = append(ids, en.meta.ID)
		}
		return true
	})
	restored := slices.Collect(maps.Values(e.restored))
	e.idx = resultIndex{}
	e.version++
	e.mu.Unlock()

	var errs []error
	for _, r := range restored {
		errs = append(errs, r.Close())
	}
	if own == nil {
		return errors.Join(errs...)
	}
	if tempDir != "" && !e.cfg.retain {
		kept := 0
		for _, id := range ids {
			if saved[id] {
				kept++
				continue
			}
			errs = append(errs, own.Delete(ctx, id))
		}
		errs = append(errs, own.Close())
		if kept == 0 {
			errs = append(errs, os.RemoveAll(tempDir))
		} else {
			e.log().Info("spill: keeping results saved in a session", "dir", tempDir, "count", kept)
		}
		return errors.Join(errs...)
	}
	errs = append(errs, own.Close())
	return errors.Join(errs...)
}

// lookup returns the entry of id or an error naming the problem.
func (e *Extension) lookup(id string) (*entry, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %s (ids look like res_0123456789abcdef01234567)", ErrInvalidID, quote(id))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	en, ok := e.idx.get(id)
	if !ok {
		var known []string
		e.idx.each(func(en *entry) bool {
			known = append(known, en.meta.ID)
			return true
		})
		slices.Sort(known)
		if len(known) > 10 {
			known = append(known[:10], "…")
		}
		if len(known) == 0 {
			return nil, fmt.Errorf("%w: %s (no results are stored)", ErrUnknownID, id)
		}
		return nil, fmt.Errorf("%w: %s (stored: %s)", ErrUnknownID, id, strings.Join(known, ", "))
	}
	if en.missing != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnknownID, id, en.missing)
	}
	return en, nil
}

// open opens a stored result after checking its SHA-256: by hashing the
// whole file when its stamp differs from the last verified one (or always,
// with WithVerifyEveryRead). The hash streams, so memory stays bounded.
func (e *Extension) open(ctx context.Context, id string) (File, Meta, error) {
	f, m, _, err := e.openIndexed(ctx, id)
	return f, m, err
}

// openIndexed is open that also returns the result's line index (nil if
// unknown). The index is built during a verification pass if missing.
func (e *Extension) openIndexed(ctx context.Context, id string) (File, Meta, []int64, error) {
	en, err := e.lookup(id)
	if errors.Is(err, ErrUnknownID) {
		if adopted, aerr := e.adopt(ctx, id); aerr != nil || adopted != nil {
			en, err = adopted, aerr
		}
	}
	if err != nil {
		return nil, Meta{}, nil, err
	}
	f, err := en.store.Open(ctx, id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Meta{}, nil, fmt.Errorf("%w: %s: its stored file is gone", ErrUnknownID, id)
		}
		return nil, Meta{}, nil, err
	}
	st := f.Stamp()
	e.mu.Lock()
	ok := st != "" && st == en.verified && !e.cfg.verifyEvery
	index := en.lines
	e.mu.Unlock()
	if ok {
		return f, en.meta, index, nil
	}
	h := sha256.New()
	li := newLineIndex(searchChunk)
	n, err := io.CopyBuffer(io.MultiWriter(h, lineIndexWriter{li}), ctxReader{ctx, f}, make([]byte, 1<<20))
	if err != nil {
		f.Close()
		return nil, Meta{}, nil, fmt.Errorf("spill: verifying %s: %w", id, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if n != en.meta.Size || got != en.meta.SHA256 {
		f.Close()
		return nil, Meta{}, nil, &CorruptError{ID: id, WantSHA256: en.meta.SHA256, GotSHA256: got, WantSize: en.meta.Size, GotSize: n}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, Meta{}, nil, fmt.Errorf("spill: reading %s: %w", id, err)
	}
	e.mu.Lock()
	e.idx.setVerified(id, st, li.index)
	e.mu.Unlock()
	return f, en.meta, li.index, nil
}

// adopt takes a result that the extension's own lasting store (WithDir or
// WithStore, never the temporary default) holds but its index does not:
// one stored by an earlier process whose state was not saved, as when a
// durable runtime re-executes a run after a crash (the tool step that
// spilled it replays its recorded envelope without spilling again). The
// stored content is read once to rebuild the metadata; its SHA-256 is
// trusted from then on, and checked at every later read as usual. It
// returns nil, nil when there is nothing to adopt.
func (e *Extension) adopt(ctx context.Context, id string) (*entry, error) {
	if e.cfg.store == nil && e.cfg.dir == "" { // the temporary default store
		return nil, nil
	}
	st, dir, err := e.ensureStore()
	if err != nil {
		return nil, err
	}
	f, err := st.Open(ctx, id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("spill: reading %s: %w", id, err)
	}
	defer f.Close()
	stamp := f.Stamp()
	c := newCapture(e.cfg.preview + 4)
	if _, err := io.CopyBuffer(c, ctxReader{ctx, f}, make([]byte, 1<<20)); err != nil {
		return nil, fmt.Errorf("spill: reading %s: %w", id, err)
	}
	typ, _ := detect(c.head, c.tailBytes(), c.size <= int64(len(c.head)))
	m := Meta{ID: id, Size: c.size, Lines: c.lineCount(), Type: typ, SHA256: c.sum(), Created: time.Now().UTC()}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if en, ok := e.idx.get(id); ok { // adopted meanwhile
		return en, nil
	}
	en := entry{meta: m, store: st, dir: dir, verified: stamp, lines: c.lines.index}
	e.idx.put(en)
	e.version++
	return &en, nil
}

type lineIndexWriter struct{ x *lineIndex }

func (w lineIndexWriter) Write(p []byte) (int, error) { w.x.write(p); return len(p), nil }

// Artifacts lists the stored results that are files, for incident bundles:
// the name is "spill/<id>.<type extension>". Results of a store without
// local files are left out.
func (e *Extension) Artifacts(ctx context.Context) ([]harness.Artifact, error) {
	e.mu.Lock()
	type item struct {
		m  Meta
		st Store
	}
	var items []item
	e.idx.each(func(en *entry) bool {
		if en.missing == "" {
			items = append(items, item{en.meta, en.store})
		}
		return true
	})
	e.mu.Unlock()
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.m.ID, b.m.ID) })
	var out []harness.Artifact
	var errs []error
	for _, it := range items {
		info, err := it.st.Stat(ctx, it.m.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if info.Path == "" {
			continue
		}
		out = append(out, harness.Artifact{Name: it.m.ArtifactName(), Path: info.Path, Size: it.m.Size, SHA256: it.m.SHA256})
	}
	return out, errors.Join(errs...)
}

// ArtifactName is the result's name among the extension's artifacts, as
// Artifacts lists it: "spill/<id>.<type extension>" (.txt, .json,
// .jsonl or .csv).
func (m Meta) ArtifactName() string { return "spill/" + m.ID + ext(m.Type) }

func ext(t Type) string {
	switch t {
	case TypeJSON:
		return ".json"
	case TypeJSONL:
		return ".jsonl"
	case TypeCSV:
		return ".csv"
	}
	return ".txt"
}
