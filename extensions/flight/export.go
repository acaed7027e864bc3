package flight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
)

// ExportOptions selects what [ExportJournal] puts in a bundle.
type ExportOptions struct {
	// RunID keeps only the events of one run (and the spans of their
	// traces); empty keeps everything.
	RunID string
	// IncludeArtifacts includes the artifacts listed in the recording's
	// artifact index: the recorder's own copies (see WithIncludeArtifacts),
	// or, for an index without copies, the original files if they still
	// exist unchanged. Those that cannot be included are named with the
	// reason in the manifest (see [Manifest.Missing]). It also includes,
	// under [PartsDir], the bytes of every media part the bundle refers
	// to that the recording kept (or that an older session snapshot holds
	// inline); the others are named in [Manifest].MissingParts.
	IncludeArtifacts bool
	// Artifacts are more files to include with IncludeArtifacts, besides
	// the recording's index: each under artifacts/<Name>, checked against
	// its SHA-256 and redacted like the others. flightrec lists here the
	// results of a remote artifact store (HARNESSX_ARTIFACTS) that the
	// session refers to, fetched into temporary files.
	Artifacts []harness.Artifact
	// MissingArtifacts are listed in the manifest as missing, with their
	// reasons (artifacts that the caller could not fetch).
	MissingArtifacts []MissingArtifact
	// Reason goes into the manifest; default "export".
	Reason string
	// Redactor redacts again what is written; default the built-in rules.
	Redactor *Redactor
	// Progress, if set, is called with the bytes of each journal segment
	// read.
	Progress func(n int64)
	// Now is the manifest's creation time; default time.Now().
	Now time.Time
}

// ErrNoEvents is returned by ExportJournal when the journal holds no event
// to export (none at all, or none of the run asked for).
var ErrNoEvents = errors.New("flight: no events to export")

// ExportJournal builds a bundle from the recording in dir (one session's
// subdirectory) and writes it to w: the journal's events, the spans of
// their traces from the span snapshot kept beside the journal, the latest
// session snapshot, and, when asked, the indexed
// artifacts. It works on the journal of a process that crashed: a torn
// last line is skipped and counted in the manifest. It honours ctx between
// segments.
func ExportJournal(ctx context.Context, dir string, w io.Writer, opts ExportOptions) (*Manifest, error) {
	if opts.Reason == "" {
		opts.Reason = "export"
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	bw := newBundleWriter(w, opts.Redactor)
	if opts.IncludeArtifacts {
		bw.IncludeParts(dir)
	}
	agent, session := agentSession(dir)
	st, err := readJournal(dir, agent, session, func(e *Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if opts.RunID == "" || e.RunID == opts.RunID {
			bw.AddEvent(e)
		}
		return nil
	}, opts.Progress)
	if err != nil {
		return nil, err
	}
	if bw.m.Events == 0 {
		if opts.RunID != "" {
			return nil, fmt.Errorf("%w: run %q is not in %s", ErrNoEvents, opts.RunID, dir)
		}
		return nil, fmt.Errorf("%w: %s", ErrNoEvents, dir)
	}
	bw.SetInfo(opts.Reason, agent, session, 0)
	bw.SetJournalStats(st)
	if req, err := otlpspans.ReadRecording(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("flight: %w", err)
	} else if err == nil {
		ids := bw.TraceIDs()
		otlpspans.Filter(req, func(id string) bool { return ids[id] })
		if err := bw.SetSpans(req); err != nil {
			return nil, err
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, recording.SessionSnapshot)); err == nil {
		if err := bw.SetSession(data); err != nil {
			return nil, err
		}
	}
	if opts.IncludeArtifacts {
		data, err := os.ReadFile(filepath.Join(dir, recording.ArtifactsIndexName))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("flight: %w", err)
		}
		var arts []indexedArtifact
		if len(data) > 0 {
			if err := json.Unmarshal(data, &arts); err != nil {
				return nil, fmt.Errorf("flight: %s: %w", recording.ArtifactsIndexName, err)
			}
		}
		for _, a := range arts {
			addIndexed(bw, dir, a)
		}
		for _, a := range opts.Artifacts {
			bw.AddArtifact(a.Name, a.Path, a.SHA256)
		}
		for _, m := range opts.MissingArtifacts {
			bw.AddMissingArtifact(m.Name, m.Reason)
		}
	}
	return bw.Close(opts.Now)
}
