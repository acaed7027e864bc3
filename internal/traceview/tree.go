package traceview

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// TreeOptions configures [WriteTree]. The zero value means the defaults.
type TreeOptions struct {
	// Attributes prints every attribute of every span below its line.
	Attributes bool
	// MaxValue caps the characters of an attribute value printed with
	// Attributes; longer values are cut and their size noted. Default 120.
	MaxValue int
}

// WriteTree prints run as a text tree: a header with the run's ID,
// trace, status and start, then one line per span with the tree drawn in
// front of its name, its duration, and what matters about it: tokens (with
// cache reads and writes and reasoning), the stop reason and the parts
// that broke the prompt cache for a chat span, a tool's status, a run's
// status, and errors marked with ✗.
func WriteTree(w io.Writer, run *Run, opts TreeOptions) error {
	if opts.MaxValue <= 0 {
		opts.MaxValue = 120
	}
	ew := bufio.NewWriter(w) // keeps the first write error; Flush returns it
	sum := run.Summary
	head := fmt.Sprintf("run %s  trace %s  %s  %s", oneLine(run.ID), run.TraceID, oneLine(sum.State), stamp(sum.Start))
	if sum.Cost != "" {
		head += "  cost " + sum.Cost
	}
	if sum.Unpriced > 0 {
		head += fmt.Sprintf("  (%d model requests without a price)", sum.Unpriced)
	}
	fmt.Fprintln(ew, head)
	// The name column is as wide as the widest indented name.
	names := make([]string, len(run.Spans))
	width := 0
	for i, s := range run.Spans {
		names[i] = treePrefix(run, i) + s.Name
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	durs := make([]string, len(run.Spans))
	dw := 0
	for i, s := range run.Spans {
		durs[i] = HumanDuration(s.Duration())
		dw = max(dw, len(durs[i]))
	}
	for i, s := range run.Spans {
		line := names[i] + strings.Repeat(" ", width-utf8.RuneCountInString(names[i])) +
			"  " + strings.Repeat(" ", dw-len(durs[i])) + durs[i]
		if d := details(s); d != "" {
			line += "  " + d
		}
		fmt.Fprintln(ew, oneLine(line))
		if opts.Attributes {
			pad := attrPrefix(run, i)
			for _, a := range s.Attrs {
				fmt.Fprintf(ew, "%s%s = %s\n", pad, oneLine(a.Key), cut(a.Value.String(), opts.MaxValue))
			}
			for _, ev := range s.Events {
				fmt.Fprintf(ew, "%sevent %s +%s\n", pad, oneLine(ev.Name), HumanDuration(ev.Time.Sub(s.Start)))
			}
		}
	}
	return ew.Flush()
}

// treePrefix returns the tree drawing in front of span i of run.
func treePrefix(run *Run, i int) string {
	d := run.Depths[i]
	if d == 0 {
		return ""
	}
	var b strings.Builder
	for level := 1; level < d; level++ {
		if hasLaterSibling(run, ancestorIndex(run, i, level)) {
			b.WriteString("│   ")
		} else {
			b.WriteString("    ")
		}
	}
	if hasLaterSibling(run, i) {
		b.WriteString("├── ")
	} else {
		b.WriteString("└── ")
	}
	return b.String()
}

// attrPrefix is the indentation of the attribute lines under span i.
func attrPrefix(run *Run, i int) string {
	var b strings.Builder
	for level := 1; level <= run.Depths[i]; level++ {
		if hasLaterSibling(run, ancestorIndex(run, i, level)) {
			b.WriteString("│   ")
		} else {
			b.WriteString("    ")
		}
	}
	if len(run.Spans[i].Children) > 0 {
		b.WriteString("│ ")
	} else {
		b.WriteString("  ")
	}
	b.WriteString("· ")
	return b.String()
}

// ancestorIndex returns the index of the ancestor of span i at depth level.
func ancestorIndex(run *Run, i, level int) int {
	for j := i; j >= 0; j-- {
		if run.Depths[j] == level {
			return j
		}
	}
	return 0
}

// hasLaterSibling reports whether another span with the same parent
// follows span i.
func hasLaterSibling(run *Run, i int) bool {
	d := run.Depths[i]
	for j := i + 1; j < len(run.Spans); j++ {
		switch {
		case run.Depths[j] == d:
			return true
		case run.Depths[j] < d:
			return false
		}
	}
	return false
}

// details is what the tree says about s after its duration.
func details(s *Span) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch s.Operation() {
	case opInvokeAgent:
		if u, ok := spanUsage(s); ok {
			parts = append(parts, usageText(u))
		}
		if c, ok := SpanCost(s); ok {
			parts = append(parts, FormatUSD(c))
		}
		// The run's state, when the header's words (ok, or error marked
		// with ✗) do not say it: paused, cancelled, ….
		if st := State(s.Attrs.Str("harnessx.run.status")); st != "ok" && st != "error" {
			if n := s.Attrs.Int("harnessx.run.pending_approvals"); n > 0 {
				st += fmt.Sprintf(" (%d pending approvals)", n)
			}
			add("%s", st)
		}
	case opChat:
		if u, ok := spanUsage(s); ok {
			parts = append(parts, usageText(u))
		}
		if c, ok := SpanCost(s); ok {
			parts = append(parts, FormatUSD(c))
		}
		if v, ok := s.Attrs.Get("gen_ai.response.finish_reasons"); ok {
			add("stop %s", strings.Join(v.Strings(), ","))
		}
		if n := s.Attrs.Int("harnessx.attempt"); n > 1 {
			add("attempt %d", n)
		}
		if st := s.Attrs.Str("harnessx.model.status"); st == "cancelled" {
			add("cancelled")
		}
		if br := cacheBreaks(s); len(br) > 0 {
			add("cache break: %s", strings.Join(br, ","))
		}
	case opExecuteTool:
		if st := s.Attrs.Str("harnessx.tool.status"); st != "" && st != "ok" {
			add("%s", st)
		}
	}
	if s.Failed() {
		msg := "✗"
		if t := s.Attrs.Str("error.type"); t != "" && t != errorTypeOther {
			msg += " error.type " + t
		} else {
			msg += " error"
		}
		if s.StatusMessage != "" {
			msg += ": " + cut(s.StatusMessage, 100)
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "  ")
}

// usageText is "in 1,234 (cache read 1,000, cache write 200) out 56
// (reasoning 12)".
func usageText(u Usage) string {
	s := "in " + Thousands(u.Input)
	var cache []string
	if u.CacheRead > 0 {
		cache = append(cache, "cache read "+Thousands(u.CacheRead))
	}
	if u.CacheCreation > 0 {
		cache = append(cache, "cache write "+Thousands(u.CacheCreation))
	}
	if len(cache) > 0 {
		s += " (" + strings.Join(cache, ", ") + ")"
	}
	s += " out " + Thousands(u.Output)
	if u.Reasoning > 0 {
		s += " (reasoning " + Thousands(u.Reasoning) + ")"
	}
	return s
}

// WriteRunList prints runs as a table: start time, run ID, agent,
// state (see [State]), duration, spans, tokens in and out, cost (see
// [FormatUSD]; "-" without one), and errors (with the error type, or the
// error's text when it has no type).
func WriteRunList(w io.Writer, runs []*RunInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "TIME\tRUN\tAGENT\tSTATUS\tDURATION\tSPANS\tTOKENS IN/OUT\tCOST\tERRORS\n")
	for _, r := range runs {
		s := r.Summary
		errs := strconv.Itoa(s.Errors)
		if s.ErrorLabel != "" {
			errs += " (" + s.ErrorLabel + ")"
		}
		cost := s.Cost
		if cost == "" {
			cost = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s/%s\t%s\t%s\n", stamp(s.Start), oneLine(r.ID), oneLine(s.Agent), oneLine(s.State),
			HumanDuration(s.Duration), s.Spans, Thousands(s.Usage.Input), Thousands(s.Usage.Output), cost, oneLine(errs))
	}
	return tw.Flush()
}

// Info returns the catalog entry of a run built in memory.
func (r *Run) Info() *RunInfo {
	return &RunInfo{Key: r.Key(), ID: r.ID, TraceID: r.TraceID, Name: r.Root.Name, Summary: r.Summary, mem: r.Spans}
}

// HumanDuration formats d for people: 45µs, 0.4ms, 12.3ms, 1.25s, 2m03s.
func HumanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < 100*time.Microsecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Thousands formats n with commas between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// cut shortens s to n runes on one line, noting the full size.
func cut(s string, n int) string {
	size := len(s)
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("… (%s bytes)", Thousands(int64(size)))
}

// oneLine replaces control characters (newlines, escapes) so that a
// value cannot break the layout or drive the terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '␣'
		}
		return r
	}, s)
}
