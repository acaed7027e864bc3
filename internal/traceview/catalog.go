package traceview

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/recording"
)

// Sources says where [Load] looks for spans and incident bundles.
type Sources struct {
	// TraceFiles are JSON-lines trace files (exporters.NewFile); missing
	// files are skipped.
	TraceFiles []string
	// FlightDirs are flight recorder roots, each holding one directory
	// per recording with its spans.json and incidents/; missing roots are
	// skipped. Files under a root that resolve outside it (through
	// symbolic links) are refused and reported.
	FlightDirs []string
}

// Incident is an incident bundle found in a recording, with the facts of
// its manifest and its first failure.
type Incident struct {
	Recording string    `json:"recording"`
	Name      string    `json:"name"`
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	Modified  time.Time `json:"modified"`
	// Reason is what triggered the bundle (the manifest's reason:
	// run_failure, tool_panic, cancellation, export, …).
	Reason  string    `json:"reason,omitempty"`
	Created time.Time `json:"created"`
	Agent   string    `json:"agent,omitempty"`
	// RunIDs are the runs its events belong to.
	RunIDs []string `json:"run_ids,omitempty"`
	// FailedRun and Error are the run and the error (or failed status) of
	// the first failure its events record; empty without one.
	FailedRun string `json:"failed_run,omitempty"`
	Error     string `json:"error,omitempty"`
}

// RunInfo is a run of a [Catalog]: its identity and summary, and where
// its spans are ([Catalog.Run] reads them).
type RunInfo struct {
	// Key identifies the run (see [Run.Key]); ID is its harnessx.run.id,
	// else its root span ID.
	Key, ID, TraceID string
	// Name is the root span's name.
	Name    string
	Summary Summary

	files []fileLines // lines of trace files holding the run's spans
	mem   []*Span     // spans of the trace from recordings and bundles
}

// Catalog is what [Load] found.
type Catalog struct {
	// Runs are all runs, oldest first.
	Runs []*RunInfo
	// Incidents are the incident bundles, oldest first.
	Incidents []Incident
	// Problems describe files that could not be read, or were refused;
	// they are skipped.
	Problems []string

	parts map[[32]byte][]string // bundles holding each media part
}

// FindRun returns the run whose ID, trace ID or key (see [Run.Key]) is
// id, the latest when several match.
func (c *Catalog) FindRun(id string) (*RunInfo, bool) {
	for i := len(c.Runs) - 1; i >= 0; i-- {
		r := c.Runs[i]
		if r.ID == id || r.TraceID == id || r.Key == id {
			return r, true
		}
	}
	return nil, false
}

// Run reads the spans of ri: the lines of the trace files that hold them
// (and nothing else of those files) and the spans of recordings and
// bundles. It fails with [ErrFileChanged] when a trace file was replaced
// or cut since it was indexed. It is safe for concurrent use.
func (c *Catalog) Run(ri *RunInfo) (*Run, error) {
	var spans []*Span
	for i := range ri.files {
		ss, err := ri.files[i].read(ri.TraceID)
		if err != nil {
			return nil, err
		}
		spans = append(spans, ss...)
	}
	for _, s := range ri.mem {
		cp := *s // BuildRuns sets Children: never on shared spans
		spans = append(spans, &cp)
	}
	for _, r := range BuildRuns(spans) {
		if r.Key() == ri.Key {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: run %s is no longer there", ErrFileChanged, ri.ID)
}

// IncidentsOf returns the incident bundles whose events belong to run id,
// newest first.
func (c *Catalog) IncidentsOf(id string) []Incident {
	var out []Incident
	for i := len(c.Incidents) - 1; i >= 0; i-- {
		if slices.Contains(c.Incidents[i].RunIDs, id) || c.Incidents[i].FailedRun == id {
			out = append(out, c.Incidents[i])
		}
	}
	return out
}

// Load reads every source: the spans of the trace files, of the
// recordings' span snapshots and of their incident bundles, grouped into
// runs (a span found in several places counts once), and the list of
// incident bundles. Trace files are indexed (see [Index]): the catalog
// holds the runs' summaries, and [Catalog.Run] reads a run's spans.
// Unreadable files are reported in Problems.
func Load(src Sources) *Catalog { return NewIndex(src).Catalog() }

// Index keeps the sources of a viewer indexed. Each trace file is read
// once, line by line, keeping of each span only what grouping spans into
// runs and summing runs up needs (IDs, name, times, status, usage, cost,
// errors) and the offset of its line; later calls read only what was
// appended. A file that shrinks or is replaced is indexed again. The
// recordings and bundles, which are bounded by the flight recorder, are
// read whole, again when their files change. Index is safe for concurrent
// use.
type Index struct {
	src   Sources
	mu    sync.Mutex
	files []*fileIndex
	mem   *memData
	sig   string // of the recordings and bundles in mem
	cat   *Catalog
}

// NewIndex returns an index of src; it reads nothing before
// [Index.Catalog].
func NewIndex(src Sources) *Index {
	x := &Index{src: src}
	for _, p := range src.TraceFiles {
		x.files = append(x.files, newFileIndex(p))
	}
	return x
}

// Catalog brings the index up to date with the files and returns the
// catalog, the same one as long as no file changed. Catalogs are never
// modified.
func (x *Index) Catalog() *Catalog {
	x.mu.Lock()
	defer x.mu.Unlock()
	changed := x.cat == nil
	for _, f := range x.files {
		if f.update() {
			changed = true
		}
	}
	if sig := signature(x.src); x.mem == nil || sig != x.sig {
		x.mem, x.sig, changed = loadMem(x.src), sig, true
	}
	if changed {
		x.cat = x.build()
	}
	return x.cat
}

// build makes the catalog of the indexed files and mem.
func (x *Index) build() *Catalog {
	m := x.mem
	c := &Catalog{Incidents: m.incidents, parts: m.parts}
	for _, f := range x.files {
		c.Problems = append(c.Problems, f.problems()...)
	}
	c.Problems = append(c.Problems, m.problems...)
	// A trace held by one trace file alone (the common case) keeps the
	// runs its file computed; one held by several sources is grouped
	// again from all of them.
	var shared map[[16]byte]bool
	if len(x.files) > 1 || len(m.skels) > 0 {
		count := map[[16]byte]int{}
		for _, f := range x.files {
			for id := range f.traces {
				count[id]++
			}
		}
		for id := range m.skels {
			count[id]++
		}
		shared = map[[16]byte]bool{}
		for id, n := range count {
			if n > 1 {
				shared[id] = true
			}
		}
	}
	for _, f := range x.files {
		for id, ts := range f.traces {
			if !shared[id] {
				c.Runs = append(c.Runs, ts.runs...)
			}
		}
	}
	for id, sk := range m.skels {
		if shared[id] {
			continue
		}
		c.Runs = append(c.Runs, runsOf(hex.EncodeToString(id[:]), []skelGroup{{skels: sk, mem: m.spans[id]}})...)
	}
	for id := range shared {
		var groups []skelGroup
		for _, f := range x.files {
			if ts := f.traces[id]; ts != nil {
				groups = append(groups, skelGroup{file: f, skels: ts.skels})
			}
		}
		if sk := m.skels[id]; sk != nil {
			groups = append(groups, skelGroup{skels: sk, mem: m.spans[id]})
		}
		c.Runs = append(c.Runs, runsOf(hex.EncodeToString(id[:]), groups)...)
	}
	if len(m.odd) > 0 {
		var copies []*Span
		for _, s := range m.odd {
			cp := *s
			copies = append(copies, &cp)
		}
		for _, r := range BuildRuns(copies) {
			c.Runs = append(c.Runs, &RunInfo{Key: r.Key(), ID: r.ID, TraceID: r.TraceID, Name: r.Root.Name, Summary: r.Summary, mem: m.odd})
		}
	}
	slices.SortFunc(c.Runs, func(a, b *RunInfo) int {
		return cmp.Or(a.Summary.Start.Compare(b.Summary.Start), strings.Compare(a.Key, b.Key))
	})
	return c
}

// memData is what the recordings and bundles hold.
type memData struct {
	spans     map[[16]byte][]*Span // by trace
	skels     map[[16]byte][]skel
	odd       []*Span // spans whose IDs are not of OTLP's sizes
	incidents []Incident
	problems  []string
	parts     map[[32]byte][]string
}

// loadMem reads the spans of the recordings' span snapshots and of their
// incident bundles, and the bundles' facts.
func loadMem(src Sources) *memData {
	m := &memData{spans: map[[16]byte][]*Span{}, skels: map[[16]byte][]skel{}, parts: map[[32]byte][]string{}}
	var spans []*Span
	for _, root := range src.FlightDirs {
		recs, refused := recordingDirs(root)
		m.problems = append(m.problems, refused...)
		for _, rec := range recs {
			if bad := outside(root, filepath.Join(rec, recording.SpansSnapshot), filepath.Join(rec, recording.SpansLog)); bad != "" {
				m.problems = append(m.problems, bad)
			} else {
				ss, err := ReadRecording(rec)
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					m.problems = append(m.problems, err.Error())
				}
				spans = append(spans, ss...)
			}
			incs, refused := incidents(root, rec)
			m.problems = append(m.problems, refused...)
			for _, inc := range incs {
				ss, b, err := ReadBundle(inc.Path)
				if err != nil {
					m.problems = append(m.problems, err.Error())
				}
				if b != nil {
					bundleParts(m.parts, inc.Path, b)
					describeIncident(&inc, b)
				}
				m.incidents = append(m.incidents, inc)
				spans = append(spans, ss...)
			}
		}
	}
	slices.SortStableFunc(m.incidents, func(a, b Incident) int {
		if d := a.Modified.Compare(b.Modified); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	for _, s := range spans {
		id, sk, ok := skelOf(s)
		if !ok {
			m.odd = append(m.odd, s)
			continue
		}
		m.spans[id] = append(m.spans[id], s)
		m.skels[id] = append(m.skels[id], sk)
	}
	return m
}

// describeIncident fills in the facts of inc from its bundle.
func describeIncident(inc *Incident, b *flight.Bundle) {
	man := &b.Manifest
	inc.Reason, inc.Created, inc.Agent, inc.RunIDs = man.Reason, man.Created, man.Agent, man.RunIDs
	evs, _ := b.Events()
	for i := range evs {
		e := &evs[i]
		if !e.IsFailure() {
			continue
		}
		inc.FailedRun = e.RunID
		inc.Error = e.Error
		if inc.Error == "" {
			inc.Error = string(e.Kind)
			if e.Status != "" {
				inc.Error += " " + e.Status
			}
			if e.Tool != "" {
				inc.Error += " (" + e.Tool + ")"
			}
		}
		inc.Error = cutBytes([]byte(inc.Error), maxStatusMsg)
		return
	}
}

// realRoot returns root with its symbolic links resolved, or "" when it
// does not exist.
func realRoot(root string) string {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return ""
	}
	if a, err := filepath.Abs(r); err == nil {
		return a
	}
	return r
}

// within resolves the symbolic links of p and reports the resolved path
// and whether it stays inside real, a resolved root.
func within(real, p string) (string, bool) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	if a, err := filepath.Abs(r); err == nil {
		r = a
	}
	rel, err := filepath.Rel(real, r)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return r, false
	}
	return r, true
}

// refusal is the problem reported for a path that leaves root.
func refusal(root, p, target string) string {
	return fmt.Sprintf("traceview: %s: refused: a symbolic link to %s, outside %s", p, target, root)
}

// outside checks that the files ps (those that exist) resolve inside
// root, and returns the problem of the first that does not, or "".
func outside(root string, ps ...string) string {
	real := realRoot(root)
	for _, p := range ps {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if r, ok := within(real, p); !ok {
			return refusal(root, p, r)
		}
	}
	return ""
}

// recordingDirs returns the recording directories of a flight root (with
// their links resolved), and the problems of the entries that are links
// leading out of it.
func recordingDirs(root string) (dirs, refused []string) {
	real := realRoot(root)
	if real == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(real)
	if err != nil {
		return nil, nil
	}
	for _, e := range ents {
		p := filepath.Join(real, e.Name())
		switch {
		case e.IsDir():
			dirs = append(dirs, p)
		case e.Type()&fs.ModeSymlink != 0:
			r, ok := within(real, p)
			if !ok {
				if r != "" {
					refused = append(refused, refusal(root, filepath.Join(root, e.Name()), r))
				}
				continue
			}
			if fi, err := os.Stat(r); err == nil && fi.IsDir() {
				dirs = append(dirs, r)
			}
		}
	}
	return dirs, refused
}

// incidents returns the bundles of a recording, each with its resolved
// path, and the problems of those that resolve outside root.
func incidents(root, rec string) (out []Incident, refused []string) {
	real := realRoot(root)
	paths, _ := filepath.Glob(filepath.Join(rec, recording.IncidentsDir, "*.tar.gz"))
	slices.Sort(paths)
	for _, p := range paths {
		r, ok := within(real, p)
		if !ok {
			if r != "" {
				refused = append(refused, refusal(root, p, r))
			}
			continue
		}
		fi, err := os.Stat(r)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, Incident{Recording: filepath.Base(rec), Name: filepath.Base(p), Path: r, Size: fi.Size(), Modified: fi.ModTime().UTC()})
	}
	return out, refused
}

// signature describes the recordings' files by name, size and
// modification time: when it changes, they are read again.
func signature(src Sources) string {
	var b strings.Builder
	stat := func(p string) {
		fi, err := os.Stat(p)
		if err != nil {
			return
		}
		fmt.Fprintf(&b, "%s\x00%d\x00%d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, root := range src.FlightDirs {
		dirs, _ := recordingDirs(root)
		for _, rec := range dirs {
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
