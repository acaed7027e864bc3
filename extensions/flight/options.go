package flight

import (
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"time"
)

// EnvDir is the environment variable that sets the default recording
// directory.
const EnvDir = "HARNESSX_FLIGHT_DIR"

// DefaultDir returns the recording directory used when none is given:
// $HARNESSX_FLIGHT_DIR, else ".harnessx/flight".
func DefaultDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return filepath.Join(".harnessx", "flight")
}

// Trigger names a condition that makes the recorder export an incident
// bundle by itself.
type Trigger string

// The automatic triggers. [Extension.Trigger] exports a bundle whatever
// the configuration.
const (
	// TriggerRunFailure fires when a run ends with status failed.
	TriggerRunFailure Trigger = "run_failure"
	// TriggerToolPanic fires when a tool panics (ToolResult.Status ==
	// harness.ToolPanicked).
	TriggerToolPanic Trigger = "tool_panic"
	// TriggerCancellation fires when a run ends with status cancelled.
	TriggerCancellation Trigger = "cancellation"
)

// Option configures an [Extension].
type Option func(*config)

// config holds the recorder's settings. Defaults:
//   - directory: [DefaultDir], read by New;
//   - ring of 4096 events;
//   - text previews of 1024 bytes;
//   - journal: [JournalOptions] defaults (8 MiB segments, 64 MiB in all,
//     2ms batches);
//   - every trigger on; artifacts not included;
//   - the built-in redaction rules;
//   - a span buffer of 2048 spans;
//   - session and span snapshots at most once a second;
//   - artifact copies and media parts ([WithIncludeArtifacts]) up to
//     256 MiB a recording;
//   - automatic incident bundles: at most 10 a minute; at most 100
//     bundles and 1 GiB in a recording's incidents directory;
//   - at most 50 recordings and 2 GiB under the root directory;
//   - the span processor registered on the tracing extension's provider
//     ([WithSpanRegistration]);
//   - no Go execution trace in bundles ([WithExecutionTrace]).
type config struct {
	dir              string
	ringSize         int
	previewBytes     int
	journal          JournalOptions
	triggers         map[Trigger]bool
	includeArtifacts bool
	rules            []Rule
	redactFuncs      []func(string) string
	spanCapacity     int
	snapshotEvery    time.Duration
	onIncident       func(path string, err error)
	now              func() time.Time
	artifactBytes    int64
	incidentRate     int
	incidentPer      time.Duration
	maxIncidents     int
	incidentBytes    int64
	maxRecordings    int
	recordingBytes   int64
	registerSpans    bool
	execTrace        *rtrace.FlightRecorder // WithExecutionTrace; never started here
	dirUnasked       bool                   // dir is the default, chosen by no option or variable
}

// Defaults of the limits; see the options that change them.
const (
	DefaultArtifactBytes  = 256 << 20 // WithArtifactLimit
	DefaultIncidentRate   = 10        // automatic bundles per DefaultIncidentPer
	DefaultIncidentPer    = time.Minute
	DefaultMaxIncidents   = 100     // bundles in a recording's incidents directory
	DefaultIncidentBytes  = 1 << 30 // bytes of bundles in a recording
	DefaultMaxRecordings  = 50      // recordings under the root directory
	DefaultRecordingBytes = 2 << 30 // bytes of all recordings under the root directory
)

// WithDir sets the root recording directory. Each agent session records
// into its own subdirectory.
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithRingSize sets how many recent events the in-memory ring keeps.
func WithRingSize(n int) Option { return func(c *config) { c.ringSize = n } }

// WithPreviewBytes sets how many bytes of a text (user message, tool
// input or result, final text) an event keeps.
func WithPreviewBytes(n int) Option { return func(c *config) { c.previewBytes = n } }

// WithJournalOptions sets the journal's segment size, total cap and batch
// interval.
func WithJournalOptions(o JournalOptions) Option { return func(c *config) { c.journal = o } }

// WithTriggers sets which automatic triggers are on; with no argument,
// none is.
func WithTriggers(ts ...Trigger) Option {
	return func(c *config) {
		c.triggers = map[Trigger]bool{}
		for _, t := range ts {
			c.triggers[t] = true
		}
	}
}

// WithIncludeArtifacts makes bundles include the artifacts of the agent's
// extensions that implement harness.ArtifactSource (spilled results, for
// instance). The recorder keeps its own copy of each artifact in the
// recording, under artifacts/<extension>/<name> (a hard link when the
// file is on the same file system, else a copy), with an index
// (artifacts.json), so that [ExportJournal] and flightrec include them
// after a crash or after the extension removed its files. It also keeps
// the bytes of the media parts the agent sent and received, once each,
// under parts/sha256-<hex>, and bundles then hold them (see Media parts
// in the package documentation). See [WithArtifactLimit].
func WithIncludeArtifacts(on bool) Option { return func(c *config) { c.includeArtifacts = on } }

// WithArtifactLimit caps the bytes of the artifact copies and media parts
// a recording keeps (default [DefaultArtifactBytes]). To make room for a
// new artifact or part, the media parts named least recently are deleted
// (Stats.PartsEvicted). Past the cap, new artifacts are not copied: the
// index names them with the reason, exports list them as missing, and
// Stats counts them in ArtifactsSkipped; the artifact copies already kept
// stay. A part that does not fit is not kept (Stats.PartsSkipped), and
// exports name it in the manifest's MissingParts.
func WithArtifactLimit(maxBytes int64) Option { return func(c *config) { c.artifactBytes = maxBytes } }

// WithIncidentRate limits automatic incident bundles (the triggers of
// [WithTriggers]) to n per period, in a token bucket that allows bursts
// of n (default [DefaultIncidentRate] per [DefaultIncidentPer]). A trigger
// over the limit writes no bundle and is counted in
// Stats.IncidentsSuppressed. n <= 0 removes the limit. [Extension.Trigger]
// is not limited.
func WithIncidentRate(n int, per time.Duration) Option {
	return func(c *config) { c.incidentRate, c.incidentPer = n, per }
}

// WithIncidentLimits caps a recording's incidents directory: after each
// bundle, the oldest bundles are deleted while there are more than
// maxCount or they hold more than maxBytes (defaults
// [DefaultMaxIncidents], [DefaultIncidentBytes]); the newest bundle always
// stays. A value <= 0 keeps the default.
func WithIncidentLimits(maxCount int, maxBytes int64) Option {
	return func(c *config) { c.maxIncidents, c.incidentBytes = maxCount, maxBytes }
}

// WithRecordingLimits caps the recordings under the root directory
// ([WithDir]): when the recorder opens its journal, it deletes the oldest
// other recordings while there are more than maxCount or they hold more
// than maxBytes (defaults [DefaultMaxRecordings],
// [DefaultRecordingBytes]). A recording in use, by this process or another
// one, is never deleted. A value <= 0 keeps the default.
func WithRecordingLimits(maxCount int, maxBytes int64) Option {
	return func(c *config) { c.maxRecordings, c.recordingBytes = maxCount, maxBytes }
}

// WithSpanRegistration sets whether the recorder registers its span
// processor on the tracing extension's TracerProvider at the first run
// (default true), when that provider is an OpenTelemetry SDK provider:
// *sdktrace.TracerProvider, or any provider with RegisterSpanProcessor
// and UnregisterSpanProcessor methods, as exporters.Provider has. It is
// unregistered at Teardown. Registering [Extension.SpanProcessor] by hand
// on that provider as well does no harm (a span given twice is kept once)
// but costs a second call at every span's end: register it by hand only
// on another provider, or with the registration off.
func WithSpanRegistration(on bool) Option { return func(c *config) { c.registerSpans = on } }

// WithRedactRules adds redaction rules after the built-in ones.
func WithRedactRules(rules ...Rule) Option {
	return func(c *config) { c.rules = append(c.rules, rules...) }
}

// WithRedactor adds a custom redaction function, applied after the rules
// to every text before it is written. It should replace what it removes
// with [Marker] so that bundles count it.
func WithRedactor(fn func(string) string) Option {
	return func(c *config) { c.redactFuncs = append(c.redactFuncs, fn) }
}

// WithSpanCapacity sets how many ended spans the span processor keeps.
func WithSpanCapacity(n int) Option { return func(c *config) { c.spanCapacity = n } }

// WithSnapshotInterval sets the minimum time between two snapshots of the
// session and the spans into the recording directory. Artifacts are
// copied as soon as a tool call ends, whatever the interval.
func WithSnapshotInterval(d time.Duration) Option { return func(c *config) { c.snapshotEvery = d } }

// WithOnIncident sets a function called after each automatic or explicit
// incident export with the bundle's path or the error.
func WithOnIncident(fn func(path string, err error)) Option {
	return func(c *config) { c.onIncident = fn }
}

// WithClock sets the clock used for incident names and manifests (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }
