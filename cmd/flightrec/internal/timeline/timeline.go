package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harnessx/harnessx/cmd/flightrec/internal/failures"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/pricing"
)

// Timeline is what flightrec show reports about a bundle.
type Timeline struct {
	Bundle    string           `json:"bundle"`
	Verified  bool             `json:"verified"`
	Problems  []flight.Problem `json:"problems,omitempty"`
	Created   time.Time        `json:"created"`
	Reason    string           `json:"reason,omitempty"`
	Agent     string           `json:"agent,omitempty"`
	SessionID string           `json:"session_id,omitempty"`
	RunIDs    []string         `json:"run_ids,omitempty"`
	Start     time.Time        `json:"start"`
	End       time.Time        `json:"end"`
	Duration  Millis           `json:"duration_ms"`
	Totals    Totals           `json:"totals"`
	// Costs is each run's cost, from its model responses' usage and the
	// price table of pricing.FromEnv (the built-in table, or the one
	// HARNESSX_PRICES names), in the order the runs first appear; empty
	// when the bundle has no model response or pricing is off.
	Costs []RunCost `json:"costs,omitempty"`
	// PricesAsOf is the price table's date; CostNote says why there are
	// no costs (pricing off, a bad price file).
	PricesAsOf string  `json:"prices_as_of,omitempty"`
	CostNote   string  `json:"cost_note,omitempty"`
	Entries    []Entry `json:"entries"`
	// FirstFailure is the index in Entries of the first failure, or -1.
	FirstFailure int `json:"first_failure"`
}

// Totals sums a bundle's events.
type Totals struct {
	Events              int   `json:"events"`
	ModelRequests       int   `json:"model_requests"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	ReasoningTokens     int64 `json:"reasoning_tokens"`
	ToolCalls           int   `json:"tool_calls"`
	ToolFailures        int   `json:"tool_failures"`
	// Failures counts distinct failures (failures.Counter); FailureEvents
	// counts the events that record one, repeats included.
	Failures         int            `json:"failures"`
	FailureEvents    int            `json:"failure_events"`
	Spans            int            `json:"spans"`
	SpansNote        string         `json:"spans_note,omitempty"`
	Artifacts        []string       `json:"artifacts"`
	MissingArtifacts []string       `json:"missing_artifacts,omitempty"`
	Redactions       map[string]int `json:"redactions"`
	// ExecutionTrace describes the bundle's Go execution trace, when it
	// has one; ExecutionTraceNote says why a recorder given one left it
	// out.
	ExecutionTrace     *ExecutionTrace `json:"execution_trace,omitempty"`
	ExecutionTraceNote string          `json:"execution_trace_note,omitempty"`
}

// ExecutionTrace is a bundle's Go execution trace member and how to open
// it.
type ExecutionTrace struct {
	Member string `json:"member"`
	Size   int64  `json:"size"`
	// Open is the shell command that extracts it and opens it with go
	// tool trace.
	Open string `json:"open"`
}

// RunCost is the cost of one run's model responses, in US dollars.
type RunCost struct {
	RunID string  `json:"run_id"`
	USD   float64 `json:"usd"`
	// Priced and Unpriced count the responses with and without a price;
	// UnpricedModels names the models without one.
	Priced         int      `json:"priced"`
	Unpriced       int      `json:"unpriced,omitempty"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
}

// Entry is one line of the timeline.
type Entry struct {
	Offset   Millis      `json:"offset_ms"`
	Time     time.Time   `json:"time"`
	Kind     flight.Kind `json:"kind"`
	Step     int         `json:"step,omitempty"`
	Duration Millis      `json:"duration_ms,omitempty"`
	Detail   string      `json:"detail"`
	Failure  bool        `json:"failure,omitempty"`
}

// Millis is a duration shown in milliseconds.
type Millis time.Duration

// MarshalJSON encodes d as a number of milliseconds.
func (d Millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(time.Duration(d).Microseconds())/1000, 'f', -1, 64), nil
}

// Build makes the timeline of b, read from the file name.
func Build(name string, b *flight.Bundle) (*Timeline, error) {
	evs, err := b.Events()
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	tl := &Timeline{
		Bundle: name, Verified: true, Created: m.Created, Reason: m.Reason, Agent: m.Agent, SessionID: m.SessionID,
		RunIDs: m.RunIDs, FirstFailure: -1, Entries: []Entry{},
	}
	if verr := b.Verify(); verr != nil {
		tl.Verified = false
		if ve, ok := verr.(*flight.VerifyError); ok {
			tl.Problems = ve.Problems
		}
	}
	t := &tl.Totals
	t.Spans = m.Spans
	t.SpansNote = m.SpansNote
	t.Artifacts = b.Artifacts()
	if t.Artifacts == nil {
		t.Artifacts = []string{}
	}
	t.MissingArtifacts = m.MissingArtifacts
	t.ExecutionTraceNote = m.ExecutionTraceNote
	for _, mem := range b.Members {
		if mem.Name == flight.ExecutionTraceName {
			t.ExecutionTrace = &ExecutionTrace{Member: mem.Name, Size: mem.Size,
				Open: "tar -xzf " + name + " " + mem.Name + " && go tool trace " + mem.Name}
		}
	}
	t.Redactions = m.Redaction.Counts
	if t.Redactions == nil {
		t.Redactions = map[string]int{}
	}
	if len(evs) > 0 {
		tl.Start, tl.End = evs[0].Time, evs[0].Time
	}
	for _, e := range evs {
		if e.Time.Before(tl.Start) {
			tl.Start = e.Time
		}
		if e.Time.After(tl.End) {
			tl.End = e.Time
		}
	}
	tl.Duration = Millis(tl.End.Sub(tl.Start))
	prices, perr := pricing.FromEnv()
	switch {
	case perr != nil:
		tl.CostNote = perr.Error()
	case prices == nil:
		tl.CostNote = "pricing is off (" + pricing.EnvPrices + ")"
	default:
		tl.PricesAsOf = prices.AsOf()
	}
	var fails failures.Counter
	for i := range evs {
		e := &evs[i]
		t.Events++
		switch e.Kind {
		case flight.KindModelResponse:
			t.ModelRequests++
			t.InputTokens += e.InputTokens
			t.OutputTokens += e.OutputTokens
			t.CacheReadTokens += e.CacheReadTokens
			t.CacheCreationTokens += e.CacheCreationTokens
			t.ReasoningTokens += e.ReasoningTokens
			if prices != nil && e.Error == "" {
				tl.addCost(prices, e)
			}
		case flight.KindToolCall:
			t.ToolCalls++
		case flight.KindToolResult:
			if e.IsFailure() {
				t.ToolFailures++
			}
		}
		fail := e.IsFailure()
		if fails.Add(e) {
			t.Failures++
		}
		if fail {
			t.FailureEvents++
			if tl.FirstFailure < 0 {
				tl.FirstFailure = len(tl.Entries)
			}
		}
		tl.Entries = append(tl.Entries, Entry{
			Offset: Millis(e.Time.Sub(tl.Start)), Time: e.Time, Kind: e.Kind, Step: e.Step,
			Duration: Millis(e.Duration), Detail: detail(e), Failure: fail,
		})
	}
	return tl, nil
}

// addCost prices one model response and adds it to its run's cost.
func (tl *Timeline) addCost(prices *pricing.Table, e *flight.Event) {
	i := slices.IndexFunc(tl.Costs, func(c RunCost) bool { return c.RunID == e.RunID })
	if i < 0 {
		tl.Costs = append(tl.Costs, RunCost{RunID: e.RunID})
		i = len(tl.Costs) - 1
	}
	rc := &tl.Costs[i]
	usd, ok := prices.USD(e.Model, harness.Usage{
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CacheReadInputTokens: e.CacheReadTokens,
		CacheCreationInputTokens: e.CacheCreationTokens, ReasoningTokens: e.ReasoningTokens,
	})
	if !ok {
		rc.Unpriced++
		if !slices.Contains(rc.UnpricedModels, e.Model) {
			rc.UnpricedModels = append(rc.UnpricedModels, e.Model)
		}
		return
	}
	rc.Priced++
	rc.USD += usd
}

func quote(s string, truncated bool) string {
	if len(s) > 100 {
		s, truncated = s[:100], true
	}
	q := strconv.Quote(s)
	if truncated {
		q += "…"
	}
	return q
}

func detail(e *flight.Event) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch e.Kind {
	case flight.KindRunStart:
		add("%s", quote(e.Text, e.Truncated))
	case flight.KindRecovered:
		add("attempt %d: the run continues after its process stopped", e.Attempt)
	case flight.KindRunEnd:
		add("%s", e.Status)
		if e.InputTokens+e.OutputTokens > 0 {
			add("tokens in %d out %d", e.InputTokens, e.OutputTokens)
		}
	case flight.KindModelRequest:
		add("%s, %d %s", e.Model, e.Messages, plural(e.Messages, "message", "messages"))
	case flight.KindModelResponse:
		add("%s", e.Model)
		if e.Error == "" {
			add("in %d out %d", e.InputTokens, e.OutputTokens)
			if e.CacheReadTokens > 0 || e.CacheCreationTokens > 0 {
				add("cache read %d write %d", e.CacheReadTokens, e.CacheCreationTokens)
			}
			if e.ReasoningTokens > 0 {
				add("reasoning %d", e.ReasoningTokens)
			}
			if e.StopReason != "" {
				add("stop %s", e.StopReason)
			}
		}
	case flight.KindToolCall:
		add("%s %s %s", e.Tool, e.CallID, quote(e.Text, e.Truncated))
	case flight.KindToolResult:
		add("%s %s %s", e.Tool, e.CallID, e.Status)
		size := e.Size
		if size == 0 {
			size = len(e.Text)
		}
		add("%d bytes %s", size, quote(e.Text, e.Truncated))
	case flight.KindApproval:
		add("%s %s %s", e.Tool, e.CallID, quote(e.Text, e.Truncated))
	case flight.KindHookFailed:
		add("hook of %s", e.FailedEvent)
	case flight.KindExtensionError:
		add("extension %q %s", e.Extension, e.Op)
	case flight.KindIncident:
		add("bundle %s (%s)", e.Path, e.Reason)
	}
	for _, p := range e.Parts {
		add("%s %s %s (%d bytes)", p.Type, p.MIME, p.URI, p.Size)
	}
	if e.Error != "" {
		add("error: %s", e.Error)
	}
	return strings.Join(parts, "  ")
}

// WriteText prints the timeline for people.
func (tl *Timeline) WriteText(w io.Writer) error {
	ew := bufio.NewWriter(w) // keeps the first write error; Flush returns it
	p := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	p("bundle:    %s\n", tl.Bundle)
	if tl.Verified {
		p("verified:  ok\n")
	} else {
		p("verified:  FAILED\n")
		for _, pr := range tl.Problems {
			p("           %s: %s\n", pr.Member, pr.Reason)
		}
	}
	p("created:   %s\n", tl.Created.Format(time.RFC3339))
	if tl.Reason != "" {
		p("reason:    %s\n", tl.Reason)
	}
	p("agent:     %s   session: %s\n", tl.Agent, tl.SessionID)
	p("runs:      %s\n", strings.Join(tl.RunIDs, ", "))
	p("time:      %s .. %s (%s)\n", tl.Start.UTC().Format(time.RFC3339Nano), tl.End.UTC().Format(time.RFC3339Nano), time.Duration(tl.Duration))
	t := tl.Totals
	p("model:     %d %s; tokens in %d (cache read %d, cache write %d), out %d (reasoning %d)\n",
		t.ModelRequests, plural(t.ModelRequests, "request", "requests"), t.InputTokens, t.CacheReadTokens, t.CacheCreationTokens, t.OutputTokens, t.ReasoningTokens)
	tl.writeCosts(p)
	p("tools:     %d %s, %d failed\n", t.ToolCalls, plural(t.ToolCalls, "call", "calls"), t.ToolFailures)
	p("failures:  %d (%d %s)\n", t.Failures, t.FailureEvents, plural(t.FailureEvents, "event", "events"))
	p("spans:     %d   artifacts: %d", t.Spans, len(t.Artifacts))
	if len(t.MissingArtifacts) > 0 {
		p(" (%d missing)", len(t.MissingArtifacts))
	}
	p("\n")
	if t.SpansNote != "" {
		p("           no spans: %s\n", t.SpansNote)
	}
	if et := t.ExecutionTrace; et != nil {
		p("go trace:  %s (%d bytes); open with: %s\n", et.Member, et.Size, et.Open)
	} else if t.ExecutionTraceNote != "" {
		p("go trace:  none: %s\n", t.ExecutionTraceNote)
	}
	var red []string
	for _, k := range slices.Sorted(maps.Keys(t.Redactions)) {
		red = append(red, fmt.Sprintf("%s=%d", k, t.Redactions[k]))
	}
	if len(red) == 0 {
		red = []string{"none"}
	}
	p("redacted:  %s\n\n", strings.Join(red, " "))

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for i, e := range tl.Entries {
		mark := "   "
		switch {
		case i == tl.FirstFailure:
			mark = ">>>"
		case e.Failure:
			mark = " ! "
		}
		step := ""
		if e.Step > 0 {
			step = fmt.Sprintf("step %d", e.Step)
		}
		dur := ""
		if e.Duration > 0 {
			dur = time.Duration(e.Duration).String()
		}
		fmt.Fprintf(tw, "%s +%.3fs\t%s\t%s\t%s\t%s\n", mark, time.Duration(e.Offset).Seconds(), e.Kind, step, dur, e.Detail)
	}
	tw.Flush()
	if tl.FirstFailure >= 0 {
		e := tl.Entries[tl.FirstFailure]
		p("\nfirst failure: +%.3fs %s", time.Duration(e.Offset).Seconds(), e.Kind)
		if e.Step > 0 {
			p(" (step %d)", e.Step)
		}
		p(": %s\n", e.Detail)
	} else {
		p("\nno failure recorded\n")
	}
	return ew.Flush()
}

// writeCosts prints a cost line per run.
func (tl *Timeline) writeCosts(p func(string, ...any)) {
	if tl.CostNote != "" && tl.Totals.ModelRequests > 0 {
		p("cost:      unknown: %s\n", tl.CostNote)
	}
	for _, c := range tl.Costs {
		p("cost:      run %s: ", c.RunID)
		if c.Priced > 0 {
			p("$%.6f (%d %s priced, prices as of %s)", c.USD, c.Priced, plural(c.Priced, "response", "responses"), tl.PricesAsOf)
		} else {
			p("unknown")
		}
		if c.Unpriced > 0 {
			p("; %d without a price (%s)", c.Unpriced, strings.Join(c.UnpricedModels, ", "))
		}
		p("\n")
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteJSON prints the timeline as indented JSON.
func (tl *Timeline) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(tl)
}
