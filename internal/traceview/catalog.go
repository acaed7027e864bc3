package traceview

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harnessx/harnessx/internal/recording"
)

// Sources says where [Load] looks for spans and incident bundles.
type Sources struct {
	// TraceFiles are JSON-lines trace files (exporters.NewFile); missing
	// files are skipped.
	TraceFiles []string
	// FlightDirs are flight recorder roots, each holding one directory
	// per recording with its spans.json and incidents/; missing roots are
	// skipped.
	FlightDirs []string
}

// Incident is an incident bundle found in a recording.
type Incident struct {
	Recording string    `json:"recording"`
	Name      string    `json:"name"`
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	Modified  time.Time `json:"modified"`
}

// Catalog is what [Load] found.
type Catalog struct {
	// Runs are all runs, oldest first.
	Runs []*Run
	// Incidents are the incident bundles, oldest first.
	Incidents []Incident
	// Problems describe files that could not be read; they are skipped.
	Problems []string

	parts map[[32]byte][]string // bundles holding each media part
}

// FindRun returns the run whose ID, trace ID or key (see [Run.Key]) is
// id, the latest when several match.
func (c *Catalog) FindRun(id string) (*Run, bool) {
	for i := len(c.Runs) - 1; i >= 0; i-- {
		r := c.Runs[i]
		if r.ID == id || r.TraceID == id || r.Key() == id {
			return r, true
		}
	}
	return nil, false
}

// Load reads every source: the spans of the trace files, of the
// recordings' span snapshots and of their incident bundles, grouped into
// runs (a span found in several places counts once), and the list of
// incident bundles. Unreadable files are reported in Problems.
func Load(src Sources) *Catalog {
	c := &Catalog{parts: map[[32]byte][]string{}}
	var spans []*Span
	for _, p := range src.TraceFiles {
		ss, st, err := ReadTraceFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			c.Problems = append(c.Problems, err.Error())
		}
		if st.Corrupt > 0 {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %d lines skipped (not OTLP JSON)", p, st.Corrupt))
		}
		spans = append(spans, ss...)
	}
	for _, root := range src.FlightDirs {
		for _, rec := range recordingDirs(root) {
			ss, err := ReadRecording(rec)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				c.Problems = append(c.Problems, err.Error())
			}
			spans = append(spans, ss...)
			for _, inc := range incidents(rec) {
				c.Incidents = append(c.Incidents, inc)
				ss, b, err := ReadBundle(inc.Path)
				if err != nil {
					c.Problems = append(c.Problems, err.Error())
				}
				if b != nil {
					bundleParts(c.parts, inc.Path, b)
				}
				spans = append(spans, ss...)
			}
		}
	}
	slices.SortStableFunc(c.Incidents, func(a, b Incident) int {
		if d := a.Modified.Compare(b.Modified); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	c.Runs = BuildRuns(spans)
	return c
}

// recordingDirs returns the subdirectories of a flight root.
func recordingDirs(root string) []string {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out
}

func incidents(rec string) []Incident {
	paths, _ := filepath.Glob(filepath.Join(rec, recording.IncidentsDir, "*.tar.gz"))
	slices.Sort(paths)
	var out []Incident
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, Incident{Recording: filepath.Base(rec), Name: filepath.Base(p), Path: p, Size: fi.Size(), Modified: fi.ModTime().UTC()})
	}
	return out
}

// signature describes the files of src by name, size and modification
// time: when it changes, the catalog is stale.
func signature(src Sources) string {
	var b strings.Builder
	stat := func(p string) {
		fi, err := os.Stat(p)
		if err != nil {
			return
		}
		fmt.Fprintf(&b, "%s\x00%d\x00%d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, p := range src.TraceFiles {
		stat(p)
	}
	for _, root := range src.FlightDirs {
		for _, rec := range recordingDirs(root) {
			stat(filepath.Join(rec, recording.SpansSnapshot))
			stat(filepath.Join(rec, recording.SpansLog))
			paths, _ := filepath.Glob(filepath.Join(rec, recording.IncidentsDir, "*.tar.gz"))
			for _, p := range paths {
				stat(p)
			}
		}
	}
	return b.String()
}

// cache keeps the last catalog and reloads it when the files change. It
// is safe for concurrent use; catalogs it returns are never modified.
type cache struct {
	src Sources
	mu  sync.Mutex
	sig string
	cat *Catalog
}

func (c *cache) get() *Catalog {
	c.mu.Lock()
	defer c.mu.Unlock()
	sig := signature(c.src)
	if c.cat == nil || sig != c.sig {
		c.cat, c.sig = Load(c.src), sig
	}
	return c.cat
}
