package flight

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/partref"
	"github.com/harnessx/harnessx/internal/redact"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// Bundle format identifiers, written into every manifest.
const (
	BundleFormat  = "harnessx-flight-bundle"
	BundleVersion = 1
)

// The names of the members of a bundle. Artifacts live under
// ArtifactsDir, as artifacts/<extension>/<artifact name>, and the bytes of
// media parts under [PartsDir], as parts/sha256-<hex>.
const (
	ManifestName = "manifest.json"
	EventsName   = "events.jsonl"
	SpansName    = "spans.json"
	SessionName  = "session.json"
	ArtifactsDir = "artifacts/"
)

// Manifest describes an incident bundle. It is the bundle's first member.
type Manifest struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// Reason is why the bundle was written: a trigger ("run_failure",
	// "tool_panic", "cancellation"), the reason given to Trigger, or
	// "export".
	Reason     string     `json:"reason,omitempty"`
	FirstEvent *time.Time `json:"first_event,omitempty"`
	LastEvent  *time.Time `json:"last_event,omitempty"`
	Agent      string     `json:"agent,omitempty"`
	SessionID  string     `json:"session_id,omitempty"`
	// RunIDs lists the runs the events belong to, in order of appearance.
	RunIDs []string `json:"run_ids,omitempty"`
	// Events counts the events; Counts splits them by kind.
	Events int            `json:"events"`
	Counts map[string]int `json:"counts"`
	Spans  int            `json:"spans"`
	// SpansNote says why a bundle whose events carry trace IDs holds no
	// span (the recorder's span processor saw none of them); empty
	// otherwise.
	SpansNote string `json:"spans_note,omitempty"`
	// Service is the service name of the recorded spans (their resource's
	// service.name), else the agent's name: what flightrec push names the
	// service when the spans' resource does not.
	Service string `json:"service,omitempty"`
	// Members lists every other member with its size and SHA-256.
	Members []Member `json:"members"`
	// Redaction summarizes what was redacted before the bundle was written.
	Redaction RedactionSummary `json:"redaction"`
	// MissingArtifacts names artifacts that were asked for but could not
	// be included, each as "<name>: <reason>" (deleted or changed since
	// they were recorded, not copied because of the recording's artifact
	// limit, …). [Manifest.Missing] splits them.
	MissingArtifacts []string `json:"missing_artifacts,omitempty"`
	// IncludedArtifacts says that the bundle was made with its artifacts
	// ([WithIncludeArtifacts], [ExportOptions].IncludeArtifacts): it then
	// holds under [PartsDir] the bytes of every media part that its
	// events, spans and session refer to ("artifact:sha256:<hex>"), or
	// names the part in MissingParts. [Bundle.Verify] checks both.
	IncludedArtifacts bool `json:"included_artifacts,omitempty"`
	// MissingParts names the media parts the bundle refers to but does
	// not hold, with the reason (the recorder did not keep their bytes,
	// or its copy was damaged).
	MissingParts []MissingPart `json:"missing_parts,omitempty"`
	// Journal holds what reading the journal found, for bundles exported
	// from one (torn lines after a crash, for instance).
	Journal *ReadStats `json:"journal,omitempty"`
	// DroppedEvents counts events the recorder could not keep.
	DroppedEvents uint64 `json:"dropped_events,omitempty"`
	// ExecutionTraceNote says why a bundle of a recorder given
	// WithExecutionTrace holds no [ExecutionTraceName]; empty otherwise.
	ExecutionTraceNote string `json:"execution_trace_note,omitempty"`
}

// MissingArtifact is an artifact that a bundle should hold but does not,
// and why.
type MissingArtifact struct {
	Name   string // artifacts/<Name> would be its member name
	Reason string
}

// Missing returns the artifacts that could not be included, with the
// reasons, from MissingArtifacts.
func (m *Manifest) Missing() []MissingArtifact {
	out := make([]MissingArtifact, 0, len(m.MissingArtifacts))
	for _, s := range m.MissingArtifacts {
		name, reason, _ := strings.Cut(s, ": ")
		out = append(out, MissingArtifact{Name: name, Reason: reason})
	}
	return out
}

// MissingPart is a media part that a bundle refers to but does not hold,
// and why.
type MissingPart struct {
	// URI is the part's reference, "artifact:sha256:<hex>".
	URI    string `json:"uri"`
	Reason string `json:"reason"`
}

// Member is a bundle member's name, size and SHA-256 (hex).
type Member struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// RedactionSummary lists the redaction rules applied and how many markers
// of each the bundle holds.
type RedactionSummary struct {
	Patterns []string       `json:"patterns"`
	Counts   map[string]int `json:"counts"`
}

// Sentinel errors of bundles. Match them with errors.Is.
var (
	// ErrBundle is wrapped by every error about a malformed or hostile
	// bundle (see [BundleError]).
	ErrBundle = errors.New("flight: invalid bundle")
	// ErrChecksum is wrapped by a [VerifyError].
	ErrChecksum = errors.New("flight: bundle verification failed")
)

// BundleError reports a malformed or hostile bundle.
type BundleError struct {
	Member string // the member at fault, if any
	Reason string
	Err    error
}

func (e *BundleError) Error() string {
	s := "flight: invalid bundle"
	if e.Member != "" {
		s += fmt.Sprintf(": member %q", e.Member)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrBundle and the cause.
func (e *BundleError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBundle}
	}
	return []error{ErrBundle, e.Err}
}

// VerifyError lists the members whose checksums or sizes do not match the
// manifest, and members missing from one side.
type VerifyError struct{ Problems []Problem }

// Problem is one verification failure.
type Problem struct {
	Member string `json:"member"`
	Reason string `json:"reason"`
}

func (e *VerifyError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("%s: %s", p.Member, p.Reason)
	}
	return "flight: bundle verification failed: " + strings.Join(parts, "; ")
}

// Is reports ErrChecksum.
func (e *VerifyError) Is(target error) bool { return target == ErrChecksum }

// bundleWriter builds an incident bundle: add events, spans, the session
// snapshot and artifacts, then Close writes the .tar.gz. Everything passes
// through the redactor first. A bundleWriter is not safe for concurrent
// use.
type bundleWriter struct {
	w         io.Writer
	red       *Redactor
	events    bytes.Buffer
	line      []byte
	m         Manifest
	runs      map[string]bool
	traces    map[string]bool
	spans     []byte
	session   []byte
	execTrace []byte
	artifacts []artifactFile

	parts    bool                // IncludeParts was called
	partsDir string              // the recording whose parts/ holds the bytes
	inline   map[[32]byte][]byte // bytes found inline in the session
	sums     *sumCache
}

type artifactFile struct {
	name string
	data []byte
}

// newBundleWriter returns a writer of a bundle to w, redacting with red
// (the built-in rules when nil).
func newBundleWriter(w io.Writer, red *Redactor) *bundleWriter {
	if red == nil {
		red = NewRedactor(nil)
	}
	return &bundleWriter{
		w: w, red: red,
		m:      Manifest{Format: BundleFormat, Version: BundleVersion, Counts: map[string]int{}},
		runs:   map[string]bool{},
		traces: map[string]bool{},
		sums:   newSumCache(),
	}
}

// AddEvent appends e to events.jsonl.
func (b *bundleWriter) AddEvent(e *Event) {
	b.line = appendEvent(b.line[:0], e, b.red)
	b.events.Write(b.line)
	m := &b.m
	m.Events++
	m.Counts[string(e.Kind)]++
	if m.FirstEvent == nil || e.Time.Before(*m.FirstEvent) {
		t := e.Time.UTC()
		m.FirstEvent = &t
	}
	if m.LastEvent == nil || e.Time.After(*m.LastEvent) {
		t := e.Time.UTC()
		m.LastEvent = &t
	}
	if m.Agent == "" {
		m.Agent = e.Agent
	}
	if m.SessionID == "" {
		m.SessionID = e.SessionID
	}
	if e.RunID != "" && !b.runs[e.RunID] {
		b.runs[e.RunID] = true
		m.RunIDs = append(m.RunIDs, e.RunID)
	}
	if e.TraceID != "" {
		b.traces[e.TraceID] = true
	}
}

// TraceIDs returns the trace IDs (hex) of the events added so far.
func (b *bundleWriter) TraceIDs() map[string]bool { return b.traces }

// SetSpans sets the spans (redacted before encoding).
func (b *bundleWriter) SetSpans(req *coltracepb.ExportTraceServiceRequest) error {
	data, err := marshalSpans(req, b.red)
	if err != nil {
		return err
	}
	b.spans = data
	b.m.Spans = otlpspans.Count(req)
	if svc := otlpspans.ServiceName(req); svc != "" {
		b.m.Service = svc
	}
	return nil
}

// noSpansNote explains a bundle without spans whose events were traced.
const noSpansNote = "the events carry %d trace IDs but the recorder kept no span of them: its span processor " +
	"was not registered on the TracerProvider that made them. The recorder registers it on the tracing " +
	"extension's provider when that is an OpenTelemetry SDK provider (exporters' included); otherwise register " +
	"Extension.SpanProcessor() on yours"

// IncludeParts makes the bundle hold the bytes of the media parts it
// refers to: those of the recording in dir (its parts/ directory, "" for
// none), or found inline in the session snapshot. Call it before
// SetSession.
func (b *bundleWriter) IncludeParts(dir string) {
	b.parts, b.partsDir = true, dir
	b.inline = map[[32]byte][]byte{}
}

// SetSession sets the session snapshot (JSON from Agent.SaveSession),
// with inline media bytes replaced by their references and redacted
// structurally.
func (b *bundleWriter) SetSession(data []byte) error {
	var found func([32]byte, []byte)
	if b.parts {
		found = func(sum [32]byte, raw []byte) { b.inline[sum] = raw }
	}
	data, err := sessionRefs(data, b.sums, found)
	if err != nil {
		return fmt.Errorf("flight: session snapshot: %w", err)
	}
	red, err := b.red.JSON(data)
	if err != nil {
		return fmt.Errorf("flight: session snapshot: %w", err)
	}
	b.session = red
	return nil
}

// SetInfo sets the manifest's reason, agent and session ID (empty values
// leave what the events say) and the dropped-events count.
func (b *bundleWriter) SetInfo(reason, agent, sessionID string, dropped uint64) {
	b.m.Reason = reason
	if agent != "" {
		b.m.Agent = agent
	}
	if sessionID != "" {
		b.m.SessionID = sessionID
	}
	b.m.DroppedEvents = dropped
}

// SetJournalStats records what reading the journal found.
func (b *bundleWriter) SetJournalStats(st ReadStats) { b.m.Journal = &st }

// MaxArtifactBytes caps one artifact included in a bundle; a larger one is
// listed as missing.
const MaxArtifactBytes = 64 << 20

// AddArtifact includes the file at filePath as artifacts/<name>, redacted
// like everything else (so its checksum in the manifest is that of the
// redacted copy). When wantSHA256 is set, the file must still have that
// checksum. A name that is not a clean relative path, a file that is not
// a regular file, a changed file or one over [MaxArtifactBytes] is listed
// in the manifest as missing instead.
func (b *bundleWriter) AddArtifact(name, filePath, wantSHA256 string) {
	full := ArtifactsDir + name
	missing := func(why string) { b.m.MissingArtifacts = append(b.m.MissingArtifacts, name+": "+why) }
	if !validMemberName(full) {
		missing("invalid name")
		return
	}
	for _, a := range b.artifacts {
		if a.name == full {
			missing("duplicate name")
			return
		}
	}
	data, err := readRegular(filePath, MaxArtifactBytes)
	if err != nil {
		missing(err.Error())
		return
	}
	if wantSHA256 != "" {
		sum := sha256.Sum256(data)
		if !strings.EqualFold(hex.EncodeToString(sum[:]), wantSHA256) {
			missing("changed since it was recorded")
			return
		}
	}
	b.artifacts = append(b.artifacts, artifactFile{name: full, data: b.redactBytes(data)})
}

// AddMissingArtifact lists the artifact name as missing from the bundle,
// with the reason.
func (b *bundleWriter) AddMissingArtifact(name, reason string) {
	b.m.MissingArtifacts = append(b.m.MissingArtifacts, name+": "+reason)
}

// redactBytes redacts data line by line.
func (b *bundleWriter) redactBytes(data []byte) []byte {
	var out []byte
	changed := false
	for line := range bytes.SplitAfterSeq(data, []byte("\n")) {
		r := b.red.String(string(line))
		if r != string(line) {
			changed = true
		}
		out = append(out, r...)
	}
	if !changed {
		return data
	}
	return out
}

func readRegular(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// Close writes the bundle and returns its manifest. created is the
// manifest's creation time.
func (b *bundleWriter) Close(created time.Time) (*Manifest, error) {
	m := &b.m
	m.Created = created.UTC()
	if m.Spans == 0 && len(b.traces) > 0 {
		m.SpansNote = fmt.Sprintf(noSpansNote, len(b.traces))
	}
	if m.Service == "" {
		m.Service = m.Agent
	}
	m.Redaction.Patterns = b.red.Patterns()
	m.Redaction.Counts = map[string]int{}
	type mem struct {
		name string
		data []byte
	}
	mems := []mem{{EventsName, b.events.Bytes()}}
	if b.spans == nil {
		b.spans = []byte("{}")
	}
	mems = append(mems, mem{SpansName, b.spans})
	if b.session != nil {
		mems = append(mems, mem{SessionName, b.session})
	}
	if b.execTrace != nil {
		mems = append(mems, mem{ExecutionTraceName, b.execTrace})
	}
	for _, a := range b.artifacts {
		mems = append(mems, mem{a.name, a.data})
	}
	if b.parts {
		m.IncludedArtifacts = true
		for _, p := range b.partFiles() {
			mems = append(mems, mem{p.name, p.data})
		}
	}
	for _, x := range mems {
		if !strings.HasPrefix(x.name, PartsDir) { // bytes kept as they are
			redact.CountMarkers(x.data, m.Redaction.Counts)
		}
		sum := sha256.Sum256(x.data)
		m.Members = append(m.Members, Member{Name: x.name, Size: int64(len(x.data)), SHA256: hex.EncodeToString(sum[:])})
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("flight: manifest: %w", err)
	}
	gz, err := gzip.NewWriterLevel(b.w, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	put := func(name string, size int64, r io.Reader) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: m.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := put(ManifestName, int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return nil, fmt.Errorf("flight: writing bundle: %w", err)
	}
	for _, x := range mems {
		if err := put(x.name, int64(len(x.data)), bytes.NewReader(x.data)); err != nil {
			return nil, fmt.Errorf("flight: writing bundle: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("flight: writing bundle: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("flight: writing bundle: %w", err)
	}
	return m, nil
}

// partFiles returns the part members of the bundle: the bytes of each
// part its events, spans and session refer to, once, in the order of
// first reference. The parts it cannot hold go into the manifest's
// MissingParts.
func (b *bundleWriter) partFiles() []artifactFile {
	var out []artifactFile
	seen := map[[32]byte]bool{}
	add := func(sum [32]byte) {
		if seen[sum] {
			return
		}
		seen[sum] = true
		data, why := b.partBytes(sum)
		if why != "" {
			b.m.MissingParts = append(b.m.MissingParts, MissingPart{URI: partref.URI(sum), Reason: why})
			return
		}
		out = append(out, artifactFile{name: PartMemberName(sum), data: data})
	}
	scanRefs(b.events.Bytes(), add)
	scanRefs(b.spans, add)
	scanRefs(b.session, add)
	return out
}

// partBytes returns the bytes of the part sum, or why the bundle cannot
// hold them.
func (b *bundleWriter) partBytes(sum [32]byte) ([]byte, string) {
	if data, ok := b.inline[sum]; ok {
		return data, ""
	}
	if b.partsDir == "" {
		return nil, "the recorder kept no copy"
	}
	data, err := readRegular(filepath.Join(b.partsDir, filepath.FromSlash(PartMemberName(sum))), MaxArtifactBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "the recording holds no copy (the recorder keeps the bytes of media parts with WithIncludeArtifacts, within WithArtifactLimit)"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, "the recording's copy cannot be read: " + err.Error()
	case sha256.Sum256(data) != sum:
		return nil, "the recording's copy is damaged: its SHA-256 differs"
	}
	return data, ""
}

// validMemberName reports whether name is a clean relative slash path
// without "..", backslashes or NUL.
func validMemberName(name string) bool {
	if name == "" || len(name) > 1024 || strings.ContainsAny(name, "\\\x00:") || strings.HasPrefix(name, "/") {
		return false
	}
	if path.Clean(name) != name || name == "." {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." || el == "." || el == "" {
			return false
		}
	}
	return true
}

// ReadOptions limits what [ReadBundle] accepts. The zero value means the
// defaults.
type ReadOptions struct {
	// MaxMemberBytes caps one member. Default 256 MiB.
	MaxMemberBytes int64
	// MaxTotalBytes caps all members together. Default 2 GiB.
	MaxTotalBytes int64
	// MaxMembers caps the number of members. Default 10,000.
	MaxMembers int
	// KeepArtifacts keeps the contents of artifacts and media parts in
	// memory; by default they are only hashed.
	KeepArtifacts bool
	// Keep, if set, keeps in memory the artifact and part members for
	// which it returns true, besides KeepArtifacts.
	Keep func(name string) bool
}

func (o *ReadOptions) defaults() {
	if o.MaxMemberBytes <= 0 {
		o.MaxMemberBytes = 256 << 20
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = 2 << 30
	}
	if o.MaxMembers <= 0 {
		o.MaxMembers = 10000
	}
}

// Bundle is a bundle read by [ReadBundle]: its manifest and its members
// with their actual sizes and checksums. Call Verify to compare them.
// [Bundle.Events] decodes the events; the spans are the OTLP/JSON export
// request of the member [SpansName] (see [Bundle.Member]), as an OTLP/HTTP
// JSON receiver takes it.
type Bundle struct {
	Manifest Manifest
	// Members lists the members other than the manifest, in archive order,
	// with their actual size and SHA-256.
	Members []Member
	data    map[string][]byte
}

// ReadBundle reads a .tar.gz bundle from r. It rejects, with a
// [*BundleError]: member names that are absolute or contain "..", links
// and any other member that is not a regular file, duplicate members,
// members over the size caps, a truncated or corrupt archive, and a
// missing or malformed manifest. It extracts nothing to disk.
func ReadBundle(r io.Reader, opts ReadOptions) (*Bundle, error) {
	opts.defaults()
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, &BundleError{Reason: "not a gzip archive", Err: err}
	}
	gz.Multistream(false)
	tr := tar.NewReader(gz)
	b := &Bundle{data: map[string][]byte{}}
	seen := map[string]bool{}
	var total int64
	var manifest []byte
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, archiveError("", err)
		}
		name := hdr.Name
		switch {
		case !validMemberName(name):
			return nil, &BundleError{Member: name, Reason: "unsafe path (absolute, \"..\" or not clean)"}
		case hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink:
			return nil, &BundleError{Member: name, Reason: "links are not allowed"}
		case hdr.Typeflag != tar.TypeReg:
			return nil, &BundleError{Member: name, Reason: fmt.Sprintf("not a regular file (type %q)", hdr.Typeflag)}
		case seen[name]:
			return nil, &BundleError{Member: name, Reason: "duplicate member"}
		case hdr.Size < 0 || hdr.Size > opts.MaxMemberBytes:
			return nil, &BundleError{Member: name, Reason: fmt.Sprintf("member of %d bytes exceeds the cap of %d", hdr.Size, opts.MaxMemberBytes)}
		case total+hdr.Size > opts.MaxTotalBytes:
			return nil, &BundleError{Member: name, Reason: fmt.Sprintf("bundle exceeds the cap of %d bytes", opts.MaxTotalBytes)}
		case len(seen) >= opts.MaxMembers:
			return nil, &BundleError{Member: name, Reason: fmt.Sprintf("more than %d members", opts.MaxMembers)}
		}
		seen[name] = true
		total += hdr.Size
		h := sha256.New()
		keep := name == ManifestName || !strings.HasPrefix(name, ArtifactsDir) && !strings.HasPrefix(name, PartsDir) ||
			opts.KeepArtifacts || opts.Keep != nil && opts.Keep(name)
		var buf bytes.Buffer
		var w io.Writer = h
		if keep {
			buf.Grow(int(min(hdr.Size, 64<<20)))
			w = io.MultiWriter(h, &buf)
		}
		n, err := io.Copy(w, io.LimitReader(tr, hdr.Size+1))
		if err != nil {
			return nil, archiveError(name, err)
		}
		if n != hdr.Size {
			return nil, &BundleError{Member: name, Reason: "size does not match its header"}
		}
		if name == ManifestName {
			manifest = buf.Bytes()
			continue
		}
		b.Members = append(b.Members, Member{Name: name, Size: n, SHA256: hexSum(h)})
		if keep {
			b.data[name] = buf.Bytes()
		}
	}
	// Read the rest of the gzip stream so that its checksum is verified.
	if _, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		return nil, archiveError("", err)
	}
	if manifest == nil {
		return nil, &BundleError{Member: ManifestName, Reason: "missing"}
	}
	if err := json.Unmarshal(manifest, &b.Manifest); err != nil {
		return nil, &BundleError{Member: ManifestName, Reason: "malformed", Err: err}
	}
	if b.Manifest.Format != BundleFormat {
		return nil, &BundleError{Member: ManifestName, Reason: fmt.Sprintf("unknown format %q", b.Manifest.Format)}
	}
	if b.Manifest.Version < 1 || b.Manifest.Version > BundleVersion {
		return nil, &BundleError{Member: ManifestName, Reason: fmt.Sprintf("unsupported version %d (this reader knows %d)", b.Manifest.Version, BundleVersion)}
	}
	return b, nil
}

func archiveError(member string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &BundleError{Member: member, Reason: "truncated archive", Err: err}
	}
	return &BundleError{Member: member, Reason: "corrupt archive", Err: err}
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// ReadBundleFile reads the bundle at path (see [ReadBundle]).
func ReadBundleFile(p string, opts ReadOptions) (*Bundle, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("flight: %w", err)
	}
	defer f.Close()
	return ReadBundle(f, opts)
}

// Verify compares every member's size and SHA-256 with the manifest. It
// returns a [*VerifyError] naming each member that differs, is missing
// from the archive, or is not listed in the manifest, and an
// [ExecutionTraceName] member that is not a Go execution trace.
func (b *Bundle) Verify() error {
	var probs []Problem
	actual := map[string]Member{}
	for _, m := range b.Members {
		actual[m.Name] = m
	}
	listed := map[string]bool{}
	for _, want := range b.Manifest.Members {
		listed[want.Name] = true
		got, ok := actual[want.Name]
		switch {
		case !ok:
			probs = append(probs, Problem{want.Name, "missing from the archive"})
		case got.Size != want.Size:
			probs = append(probs, Problem{want.Name, fmt.Sprintf("size %d, manifest says %d", got.Size, want.Size)})
		case !strings.EqualFold(got.SHA256, want.SHA256):
			probs = append(probs, Problem{want.Name, fmt.Sprintf("sha256 %s, manifest says %s", got.SHA256, want.SHA256)})
		}
	}
	for _, m := range b.Members {
		if !listed[m.Name] {
			probs = append(probs, Problem{m.Name, "not listed in the manifest"})
		}
	}
	if data, ok := b.data[ExecutionTraceName]; ok && listed[ExecutionTraceName] {
		if err := checkExecutionTrace(data); err != nil {
			probs = append(probs, Problem{ExecutionTraceName, err.Error()})
		}
	}
	probs = append(probs, b.verifyParts()...)
	if len(probs) > 0 {
		return &VerifyError{Problems: probs}
	}
	return nil
}

// verifyParts checks the media parts: each part member's SHA-256 must be
// the one its name says and, in a bundle made with its artifacts, each
// part reference of the events, spans and session must have its member,
// unless the manifest names it missing.
func (b *Bundle) verifyParts() []Problem {
	var probs []Problem
	present := map[string]bool{}
	for _, m := range b.Members {
		if !strings.HasPrefix(m.Name, PartsDir) {
			continue
		}
		present[m.Name] = true
		sum, ok := ParsePartMemberName(m.Name)
		switch {
		case !ok:
			probs = append(probs, Problem{m.Name, "not a part name (parts/sha256-<64 hex digits>)"})
		case !strings.EqualFold(m.SHA256, hexSum32(sum)):
			probs = append(probs, Problem{m.Name, fmt.Sprintf("content has sha256 %s, not the one its name says", m.SHA256)})
		}
	}
	if !b.Manifest.IncludedArtifacts {
		return probs
	}
	declared := map[string]bool{}
	for _, mp := range b.Manifest.MissingParts {
		declared[mp.URI] = true
	}
	reported := map[[32]byte]bool{}
	for _, member := range []string{EventsName, SpansName, SessionName} {
		scanRefs(b.data[member], func(sum [32]byte) {
			name := PartMemberName(sum)
			if present[name] || reported[sum] || declared[partref.URI(sum)] {
				return
			}
			reported[sum] = true
			probs = append(probs, Problem{name, "referenced by " + member + " but not in the bundle"})
		})
	}
	return probs
}

// Parts returns the names of the media part members, in order.
func (b *Bundle) Parts() []string {
	var names []string
	for _, m := range b.Members {
		if strings.HasPrefix(m.Name, PartsDir) {
			names = append(names, m.Name)
		}
	}
	return slices.Clip(names)
}

// Member returns the contents of a member kept in memory.
func (b *Bundle) Member(name string) ([]byte, bool) {
	d, ok := b.data[name]
	return d, ok
}

// Events decodes events.jsonl.
func (b *Bundle) Events() ([]Event, error) {
	data, ok := b.data[EventsName]
	if !ok {
		return nil, &BundleError{Member: EventsName, Reason: "missing"}
	}
	var out []Event
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := ParseEvent(line)
		if err != nil {
			return nil, &BundleError{Member: EventsName, Reason: fmt.Sprintf("line %d", i+1), Err: err}
		}
		out = append(out, e)
	}
	return out, nil
}

// Artifacts returns the names of the artifact members, in order.
func (b *Bundle) Artifacts() []string {
	var names []string
	for _, m := range b.Members {
		if strings.HasPrefix(m.Name, ArtifactsDir) {
			names = append(names, m.Name)
		}
	}
	return slices.Clip(names)
}
