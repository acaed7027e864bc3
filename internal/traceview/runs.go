package traceview

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Run is one agent run: a root invoke_agent span and its descendants.
type Run struct {
	// ID is the run's harnessx.run.id, else its root span ID. A run paused
	// for approvals and resumed keeps its ID across two root spans.
	ID      string
	TraceID string
	Root    *Span
	// Spans are the root and its descendants, depth first, children by
	// start time; Depths[i] is the nesting depth of Spans[i] (0 for the
	// root).
	Spans   []*Span
	Depths  []int
	Summary Summary
}

// Key identifies the run among runs that share an ID: trace ID and root
// span ID, joined by "-".
func (r *Run) Key() string { return r.TraceID + "-" + r.Root.SpanID }

// Summary sums up a run.
type Summary struct {
	Agent string `json:"agent"`
	// Status is the run's harnessx.run.status (completed, failed, paused,
	// cancelled, …), else "error" or "ok"; State says it in two words
	// where it can (see [State]).
	Status   string        `json:"status"`
	State    string        `json:"state"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	Spans    int           `json:"spans"`
	// Usage sums the usage of the run's chat spans (subagents' included).
	Usage Usage `json:"usage"`
	// CostUSD sums the cost (harnessx.cost.usd) of the run's chat spans,
	// subagents' included, else is the root's; Cost is it formatted with
	// [FormatUSD], "" when no span of the run has a cost. Unpriced counts
	// the model requests without a price
	// (harnessx.cost.unpriced_requests of its invoke_agent spans).
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Cost     string  `json:"cost,omitempty"`
	Unpriced int64   `json:"unpriced_requests,omitempty"`
	// Models counts chat spans; Tools counts execute_tool spans.
	Models int `json:"model_calls"`
	Tools  int `json:"tool_calls"`
	// Errors counts the spans that record an error. ErrorType is the
	// first error.type that names a type, the root's first; "_OTHER" (the
	// conventions' value for an error without a type) only when no span
	// names one. Error is the status message (the error text, cut) of the
	// root when it failed, else of the first span that failed.
	// ErrorLabel says what failed in a few words: ErrorType when it names
	// a type, else Error.
	Errors     int    `json:"errors"`
	ErrorType  string `json:"error_type,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorLabel string `json:"error_label,omitempty"`
	// CacheBreaks lists the prefix-key parts whose change broke the
	// prompt cache (harnessx.prefix_key.changed), each once, in order.
	CacheBreaks []string `json:"cache_breaks,omitempty"`
}

// Failed reports whether the run records an error.
func (s Summary) Failed() bool { return s.Errors > 0 }

// BuildRuns groups spans into runs, oldest first. Spans given twice (the
// same trace and span ID, as when a trace file and a recording both hold
// them) are kept once. A root is an invoke_agent span without an
// invoke_agent ancestor; a trace without any invoke_agent span gives one
// run per span whose parent is unknown. The children lists of the spans
// are set.
func BuildRuns(spans []*Span) []*Run {
	type key struct{ trace, span string }
	byID := make(map[key]*Span, len(spans))
	var uniq []*Span
	for _, s := range spans {
		k := key{s.TraceID, s.SpanID}
		if _, dup := byID[k]; dup {
			continue
		}
		byID[k] = s
		uniq = append(uniq, s)
	}
	agentTraces := map[string]bool{}
	for _, s := range uniq {
		s.Children = nil
		if s.Operation() == opInvokeAgent {
			agentTraces[s.TraceID] = true
		}
	}
	for _, s := range uniq {
		if p := byID[key{s.TraceID, s.ParentID}]; s.ParentID != "" && p != nil && p != s {
			p.Children = append(p.Children, s)
		}
	}
	for _, s := range uniq {
		slices.SortStableFunc(s.Children, func(a, b *Span) int { return a.Start.Compare(b.Start) })
	}
	// isRoot reports whether s starts a run; the walk up is bounded so
	// that a cycle of parent IDs cannot loop.
	isRoot := func(s *Span) bool {
		parentKnown := s.ParentID != "" && byID[key{s.TraceID, s.ParentID}] != nil
		if !agentTraces[s.TraceID] {
			return !parentKnown
		}
		if s.Operation() != opInvokeAgent {
			return false
		}
		p := s
		for range len(uniq) {
			if p.ParentID == "" {
				return true
			}
			p = byID[key{p.TraceID, p.ParentID}]
			if p == nil {
				return true
			}
			if p == s {
				return true
			}
			if p.Operation() == opInvokeAgent {
				return false
			}
		}
		return true
	}
	var runs []*Run
	for _, s := range uniq {
		if isRoot(s) {
			runs = append(runs, newRun(s))
		}
	}
	slices.SortStableFunc(runs, func(a, b *Run) int {
		return cmp.Or(a.Root.Start.Compare(b.Root.Start), strings.Compare(a.Key(), b.Key()))
	})
	return runs
}

func newRun(root *Span) *Run {
	r := &Run{ID: root.Attrs.Str("harnessx.run.id"), TraceID: root.TraceID, Root: root}
	if r.ID == "" {
		r.ID = root.SpanID
	}
	seen := map[*Span]bool{}
	var walk func(s *Span, depth int)
	walk = func(s *Span, depth int) {
		if seen[s] {
			return
		}
		seen[s] = true
		r.Spans = append(r.Spans, s)
		r.Depths = append(r.Depths, depth)
		for _, c := range s.Children {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	r.Summary = summarize(r)
	return r
}

func summarize(r *Run) Summary {
	root := r.Root
	sum := Summary{
		Agent:    root.Attrs.Str("gen_ai.agent.name"),
		Status:   root.Attrs.Str("harnessx.run.status"),
		Start:    root.Start,
		Duration: root.Duration(),
		Spans:    len(r.Spans),
	}
	if sum.Agent == "" {
		sum.Agent = strings.TrimPrefix(root.Name, opInvokeAgent+" ")
	}
	seenBreak := map[string]bool{}
	var (
		chatCost  float64
		chatCosts int
		other     bool // an error.type _OTHER was seen
	)
	for _, s := range r.Spans { // the root first
		switch s.Operation() {
		case opChat:
			sum.Models++
			if u, ok := spanUsage(s); ok {
				sum.Usage.add(u)
			}
			if c, ok := SpanCost(s); ok {
				chatCost += c
				chatCosts++
			}
			for _, part := range cacheBreaks(s) {
				if !seenBreak[part] {
					seenBreak[part] = true
					sum.CacheBreaks = append(sum.CacheBreaks, part)
				}
			}
		case opExecuteTool:
			sum.Tools++
		case opInvokeAgent:
			sum.Unpriced += s.Attrs.Int(keyUnpriced)
		}
		if s.Failed() {
			sum.Errors++
			switch t := s.Attrs.Str("error.type"); t {
			case "":
			case errorTypeOther:
				other = true
			default:
				if sum.ErrorType == "" {
					sum.ErrorType = t
				}
			}
			if sum.Error == "" && s.StatusMessage != "" {
				sum.Error = cutBytes([]byte(oneLine(s.StatusMessage)), 200)
			}
		}
	}
	if sum.ErrorType == "" && other {
		sum.ErrorType = errorTypeOther
	}
	switch {
	case chatCosts > 0:
		sum.CostUSD = chatCost
		sum.Cost = FormatUSD(chatCost)
	default:
		if c, ok := SpanCost(root); ok {
			sum.CostUSD = c
			sum.Cost = FormatUSD(c)
		}
	}
	if sum.Status == "" {
		sum.Status = "ok"
		if root.Failed() {
			sum.Status = "error"
		}
	}
	sum.State = State(sum.Status)
	sum.ErrorLabel = ErrorLabel(sum.ErrorType, sum.Error)
	return sum
}

// errorTypeOther is the error.type of an error without a type.
const errorTypeOther = "_OTHER"

// State says a run status in the viewer's words: "ok" for a completed
// run, "error" for a failed one, and other statuses (paused, cancelled,
// suspended) as they are.
func State(status string) string {
	switch status {
	case "completed", "ok", "":
		return "ok"
	case "failed", "error":
		return "error"
	}
	return status
}

// ErrorLabel names an error in a few words: its type when that names one
// (not "" or "_OTHER"), else its message cut to 80 characters, else its
// type.
func ErrorLabel(typ, msg string) string {
	if typ != "" && typ != errorTypeOther {
		return typ
	}
	if msg != "" {
		return short(msg, 80)
	}
	return typ
}

// short returns s on one line, cut to n characters with an ellipsis.
func short(s string, n int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// cacheBreaks returns the prefix-key parts that broke the prompt cache at
// the chat span s: its harnessx.prefix_key.changed attribute, else that of
// its prompt_cache_break event.
func cacheBreaks(s *Span) []string {
	if v, ok := s.Attrs.Get("harnessx.prefix_key.changed"); ok {
		return v.Strings()
	}
	for _, ev := range s.Events {
		if ev.Name == "prompt_cache_break" {
			if v, ok := ev.Attrs.Get("harnessx.prefix_key.changed"); ok {
				return v.Strings()
			}
		}
	}
	return nil
}
