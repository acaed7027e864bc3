package recordings

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harnessx/harnessx/cmd/flightrec/internal/failures"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/recording"
)

// Run summarizes one run of a recording. Its tokens are those of its
// run_end event, or, for a run without one (a killed process), the sum of
// its model responses. Failures counts distinct failures
// (failures.Counter).
type Run struct {
	ID           string    `json:"id"`
	Status       string    `json:"status"` // "running" when no run_end was recorded
	Events       int       `json:"events"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	ToolCalls    int       `json:"tool_calls"`
	Failures     int       `json:"failures"`
}

// Incident is an incident bundle of a recording.
type Incident struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Recording summarizes one recording directory.
type Recording struct {
	Name      string          `json:"name"`
	Dir       string          `json:"dir"`
	Agent     string          `json:"agent,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Events    int             `json:"events"`
	First     time.Time       `json:"first"`
	Last      time.Time       `json:"last"`
	Segments  int             `json:"segments"`
	Bytes     int64           `json:"bytes"`
	Torn      int             `json:"torn_lines,omitempty"`
	Corrupt   int             `json:"corrupt_lines,omitempty"`
	Runs      []*Run          `json:"runs"`
	Incidents []Incident      `json:"incidents"`
	Stats     recording.Stats `json:"-"`
	// SegmentEvents counts the events of each segment read, in order, so
	// that a later read of the journal can report events as segments end.
	SegmentEvents []int `json:"-"`
}

// ErrNoRecordings is returned when the root holds no recording.
var ErrNoRecordings = errors.New("no recordings")

// Scan reads every recording under root, sorted by their last event,
// oldest first.
func Scan(root string) ([]*Recording, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (the directory does not exist)", ErrNoRecordings, root)
	}
	if err != nil {
		return nil, err
	}
	var recs []*Recording
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !isRecording(dir) {
			continue
		}
		r, err := ScanOne(dir)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoRecordings, root)
	}
	slices.SortStableFunc(recs, func(a, b *Recording) int {
		if c := a.Last.Compare(b.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return recs, nil
}

func isRecording(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, recording.InfoName)); err == nil {
		return true
	}
	segs, err := recording.Segments(dir)
	return err == nil && len(segs) > 0
}

// ScanOne reads the recording in dir.
func ScanOne(dir string) (*Recording, error) {
	r := &Recording{Name: filepath.Base(dir), Dir: dir, Runs: []*Run{}, Incidents: []Incident{}}
	if info, err := recording.ReadInfo(dir); err == nil {
		r.Agent, r.SessionID = info.Agent, info.SessionID
	}
	runs := map[string]*Run{}
	var fails failures.Counter
	type usage struct{ in, out int64 }
	responses := map[string]*usage{} // model response usage by run
	counted := 0                     // events of the segments before
	st, err := flight.ReadJournal(dir, func(e *flight.Event) error {
		r.Events++
		if r.First.IsZero() || e.Time.Before(r.First) {
			r.First = e.Time
		}
		if e.Time.After(r.Last) {
			r.Last = e.Time
		}
		if r.Agent == "" {
			r.Agent = e.Agent
		}
		if r.SessionID == "" {
			r.SessionID = e.SessionID
		}
		if e.RunID == "" {
			return nil
		}
		run := runs[e.RunID]
		if run == nil {
			run = &Run{ID: e.RunID, Status: "running", Start: e.Time}
			runs[e.RunID] = run
			r.Runs = append(r.Runs, run)
		}
		run.Events++
		if e.Time.After(run.End) {
			run.End = e.Time
		}
		switch e.Kind {
		case flight.KindRunEnd:
			run.Status = e.Status
			run.InputTokens, run.OutputTokens = e.InputTokens, e.OutputTokens
		case flight.KindToolCall:
			run.ToolCalls++
		case flight.KindModelResponse:
			u := responses[e.RunID]
			if u == nil {
				u = &usage{}
				responses[e.RunID] = u
			}
			u.in += e.InputTokens
			u.out += e.OutputTokens
		}
		fails.Add(e)
		return nil
	}, func(int64) {
		r.SegmentEvents = append(r.SegmentEvents, r.Events-counted)
		counted = r.Events
	})
	if err != nil {
		return nil, err
	}
	for _, run := range r.Runs {
		run.Failures = fails.Run(run.ID)
		if u := responses[run.ID]; u != nil && run.Status == "running" {
			run.InputTokens, run.OutputTokens = u.in, u.out
		}
	}
	r.Stats = recording.Stats(st)
	r.Segments, r.Bytes, r.Torn, r.Corrupt = st.Segments, st.Bytes, st.Torn, st.Corrupt
	incs, _ := filepath.Glob(filepath.Join(dir, recording.IncidentsDir, "*.tar.gz"))
	slices.Sort(incs)
	for _, p := range incs {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		r.Incidents = append(r.Incidents, Incident{Name: filepath.Base(p), Path: p, Size: fi.Size()})
	}
	return r, nil
}

// FindRun returns the recording holding run id.
func FindRun(recs []*Recording, id string) (*Recording, *Run, bool) {
	for _, r := range recs {
		for _, run := range r.Runs {
			if run.ID == id {
				return r, run, true
			}
		}
	}
	return nil, nil, false
}

// LastRun returns the run that started last.
func LastRun(recs []*Recording) (*Recording, *Run, bool) {
	var rec *Recording
	var last *Run
	for _, r := range recs {
		for _, run := range r.Runs {
			if last == nil || !run.Start.Before(last.Start) {
				rec, last = r, run
			}
		}
	}
	return rec, last, last != nil
}
