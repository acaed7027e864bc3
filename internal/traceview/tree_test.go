package traceview

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fixtureSpans returns hand-made spans of several runs, with fixed times.
func fixtureSpans() map[string][]*Span {
	tid := func(n int) string { return id(n, 16) }
	sid := func(n int) string { return id(n, 8) }
	agent := func(tr, sp int, name string, start, end float64, attrs ...Attr) *Span {
		return &Span{TraceID: tid(tr), SpanID: sid(sp), Name: "invoke_agent " + name, Kind: "internal", Start: at(start), End: at(end),
			Status: StatusUnset, Attrs: append(Attrs{str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", name)}, attrs...)}
	}
	chat := func(tr, sp, parent int, start, end float64, attrs ...Attr) *Span {
		return &Span{TraceID: tid(tr), SpanID: sid(sp), ParentID: sid(parent), Name: "chat claude-haiku-5-5", Kind: "client",
			Start: at(start), End: at(end), Attrs: append(Attrs{str("gen_ai.operation.name", "chat")}, attrs...)}
	}
	tool := func(tr, sp, parent int, name string, start, end float64, attrs ...Attr) *Span {
		return &Span{TraceID: tid(tr), SpanID: sid(sp), ParentID: sid(parent), Name: "execute_tool " + name, Kind: "internal",
			Start: at(start), End: at(end), Attrs: append(Attrs{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", name)}, attrs...)}
	}
	usage := func(in, out, read, write int64) []Attr {
		return []Attr{num("gen_ai.usage.input_tokens", in), num("gen_ai.usage.output_tokens", out),
			num("gen_ai.usage.cache_read.input_tokens", read), num("gen_ai.usage.cache_creation.input_tokens", write)}
	}
	withUsage := func(s *Span, in, out, read, write int64) *Span {
		s.Attrs = append(s.Attrs, usage(in, out, read, write)...)
		return s
	}

	cost := func(usd float64) Attr { return Attr{"harnessx.cost.usd", Value{Type: TypeDouble, Double: usd}} }
	toolRun := []*Span{
		withUsage(agent(1, 1, "weather", 0, 12.3, str("harnessx.run.id", "run-1"), str("harnessx.run.status", "completed"), cost(0.0064199999999999995)), 1234, 56, 1000, 0),
		withUsage(chat(1, 2, 1, 0.2, 8.3, list("gen_ai.response.finish_reasons", "tool_use"), cost(0.0041199999999999995)), 600, 31, 500, 0),
		tool(1, 3, 1, "get_weather", 8.4, 8.8, str("harnessx.tool.status", "ok")),
		withUsage(chat(1, 4, 1, 8.9, 12.2, list("gen_ai.response.finish_reasons", "end_turn"),
			list("harnessx.prefix_key.changed", "tools"), num("gen_ai.usage.reasoning.output_tokens", 7), cost(0.0023)), 634, 25, 500, 0),
	}
	failed := []*Span{
		agent(2, 1, "billing", 0, 1500, str("harnessx.run.id", "run-2"), str("harnessx.run.status", "failed"),
			str("error.type", "*harness.ProviderError")),
		withUsage(chat(2, 2, 1, 1, 100, list("gen_ai.response.finish_reasons", "tool_use")), 500, 30, 0, 280),
		tool(2, 3, 1, "fetch_config", 101, 150, str("harnessx.tool.status", "denied"), str("error.type", "denied")),
		chat(2, 4, 1, 151, 1499, num("harnessx.attempt", 2), str("harnessx.model.status", "error"), str("error.type", "*harness.ProviderError")),
	}
	failed[0].Status, failed[0].StatusMessage = StatusError, "model request 2: upstream overloaded"
	failed[3].Status, failed[3].StatusMessage = StatusError, "upstream overloaded"
	paused := []*Span{
		agent(3, 1, "deployer", 0, 45, str("harnessx.run.id", "run-3"), str("harnessx.run.status", "paused"), num("harnessx.run.pending_approvals", 2)),
		withUsage(chat(3, 2, 1, 1, 40, list("gen_ai.response.finish_reasons", "tool_use")), 100, 10, 0, 0),
		tool(3, 3, 1, "deploy", 41, 42, str("harnessx.tool.status", "pending_approval")),
		tool(3, 4, 1, "notify", 41.5, 42, str("harnessx.tool.status", "pending_approval")),
	}
	sub := []*Span{
		agent(4, 1, "planner", 0, 90_000, str("harnessx.run.id", "run-4"), str("harnessx.run.status", "cancelled")),
		withUsage(chat(4, 2, 1, 1, 1000, list("gen_ai.response.finish_reasons", "tool_use")), 100, 10, 0, 0),
		tool(4, 3, 1, "research", 1001, 80_000),
		agent(4, 5, "researcher", 1002, 79_999, str("harnessx.run.status", "completed")),
		withUsage(chat(4, 6, 5, 1003, 79_000), 2000, 200, 0, 0),
		tool(4, 7, 5, "search", 79_001, 79_500),
		chat(4, 8, 1, 80_001, 90_000, str("harnessx.model.status", "cancelled")),
	}
	sub[3].ParentID = id(3, 8)
	hostile := []*Span{
		agent(5, 1, "evil\x1b[31m\nagent", 0, 1, str("harnessx.run.id", "run-\n5")),
		tool(5, 2, 1, "<script>alert(1)</script>", 0.1, 0.05),
	}
	return map[string][]*Span{"tool_run": toolRun, "failed": failed, "paused": paused, "subagent": sub, "hostile": hostile}
}

func TestWriteTree(t *testing.T) {
	for name, spans := range fixtureSpans() {
		t.Run(name, func(t *testing.T) {
			runs := BuildRuns(spans)
			if len(runs) != 1 {
				t.Fatalf("%d runs, want 1", len(runs))
			}
			var b bytes.Buffer
			if err := WriteTree(&b, runs[0], TreeOptions{}); err != nil {
				t.Fatal(err)
			}
			golden(t, "tree_"+name+".golden", b.String())
			if strings.ContainsAny(b.String(), "\x1b\r") {
				t.Error("control characters reach the terminal")
			}
		})
	}
}

func TestWriteTreeAttributes(t *testing.T) {
	spans := fixtureSpans()["tool_run"]
	spans[2].Attrs = append(spans[2].Attrs, str("gen_ai.tool.call.result", strings.Repeat("x", 500)))
	var b bytes.Buffer
	if err := WriteTree(&b, BuildRuns(spans)[0], TreeOptions{Attributes: true, MaxValue: 40}); err != nil {
		t.Fatal(err)
	}
	golden(t, "tree_attributes.golden", b.String())
}

func TestWriteRunList(t *testing.T) {
	var all []*Span
	for _, ss := range fixtureSpans() {
		all = append(all, ss...)
	}
	var runs []*RunInfo
	for _, r := range BuildRuns(all) {
		runs = append(runs, r.Info())
	}
	var b bytes.Buffer
	if err := WriteRunList(&b, runs); err != nil {
		t.Fatal(err)
	}
	golden(t, "runlist.golden", b.String())
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name       string
		status     string
		state      string
		usage      Usage
		cost       string
		errors     int
		errorType  string
		errorLabel string
		breaks     string
		models     int
		tools      int
	}{
		{name: "tool_run", status: "completed", state: "ok", usage: Usage{Input: 1234, Output: 56, CacheRead: 1000, Reasoning: 7}, cost: "$0.00642",
			breaks: "tools", models: 2, tools: 1},
		{name: "failed", status: "failed", state: "error", usage: Usage{Input: 500, Output: 30, CacheCreation: 280}, errors: 3,
			errorType: "*harness.ProviderError", errorLabel: "*harness.ProviderError", models: 2, tools: 1},
		{name: "paused", status: "paused", state: "paused", usage: Usage{Input: 100, Output: 10}, models: 1, tools: 2},
		{name: "subagent", status: "cancelled", state: "cancelled", usage: Usage{Input: 2100, Output: 210}, models: 3, tools: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := BuildRuns(fixtureSpans()[tt.name])[0].Summary
			if s.Status != tt.status || s.State != tt.state || s.Usage != tt.usage || s.Cost != tt.cost || s.Errors != tt.errors ||
				s.ErrorType != tt.errorType || s.ErrorLabel != tt.errorLabel ||
				strings.Join(s.CacheBreaks, ",") != tt.breaks || s.Models != tt.models || s.Tools != tt.tools {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

// TestSummaryErrorType: _OTHER (an error without a Go type) gives way to
// a type named by another span of the run, and without one the label is
// the error's text.
func TestSummaryErrorType(t *testing.T) {
	root := &Span{TraceID: id(9, 16), SpanID: id(1, 8), Name: "invoke_agent a", Status: StatusError, StatusMessage: "model request 1: boom",
		Attrs: Attrs{str("gen_ai.operation.name", "invoke_agent"), str("harnessx.run.status", "failed"), str("error.type", "_OTHER")}}
	chat := &Span{TraceID: id(9, 16), SpanID: id(2, 8), ParentID: id(1, 8), Name: "chat m", Status: StatusError, StatusMessage: "boom",
		Attrs: Attrs{str("gen_ai.operation.name", "chat"), str("error.type", "_OTHER")}}
	tool := &Span{TraceID: id(9, 16), SpanID: id(3, 8), ParentID: id(1, 8), Name: "execute_tool t", Status: StatusError, StatusMessage: "no such file",
		Attrs: Attrs{str("gen_ai.operation.name", "execute_tool"), str("error.type", "*fs.PathError")}}
	s := BuildRuns([]*Span{root, chat, tool})[0].Summary
	if s.ErrorType != "*fs.PathError" || s.ErrorLabel != "*fs.PathError" || s.Error != "model request 1: boom" || s.State != "error" {
		t.Errorf("with a named type: %+v", s)
	}
	for _, sp := range []*Span{root, chat, tool} {
		sp.Children = nil
	}
	s = BuildRuns([]*Span{root, chat})[0].Summary
	if s.ErrorType != "_OTHER" || s.ErrorLabel != "model request 1: boom" {
		t.Errorf("without one: %+v", s)
	}
}

func TestFormatUSD(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{0, "$0"},
		{0.0041199999999999995, "$0.00412"},
		{0.0041, "$0.0041"},
		{0.000898, "$0.000898"},
		{0.5, "$0.50"},
		{0.1234567, "$0.1235"},
		{0.99999, "$1.00"},
		{0.0000001234, "$0.0000001234"},
		{1, "$1.00"},
		{1.005, "$1.00"},
		{12.3456, "$12.35"},
		{1234567.891, "$1,234,567.89"},
		{-0.25, "-$0.25"},
	} {
		if got := FormatUSD(tt.in); got != tt.want {
			t.Errorf("FormatUSD(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBuildRuns(t *testing.T) {
	spans := fixtureSpans()["subagent"]
	// Given twice, as when the trace file and a recording both hold them.
	runs := BuildRuns(append(append([]*Span{}, spans...), spans...))
	if len(runs) != 1 {
		t.Fatalf("%d runs, want the subagent inside the planner's run", len(runs))
	}
	var got []string
	for i, s := range runs[0].Spans {
		got = append(got, strings.Repeat(".", runs[0].Depths[i])+s.Name)
	}
	want := "invoke_agent planner|.chat claude-haiku-5-5|.execute_tool research|..invoke_agent researcher|" +
		"...chat claude-haiku-5-5|...execute_tool search|.chat claude-haiku-5-5"
	if strings.Join(got, "|") != want {
		t.Errorf("tree\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	// A trace without invoke_agent: its parentless spans are runs.
	other := []*Span{{TraceID: id(9, 16), SpanID: id(9, 8), Name: "GET /", Start: at(0), End: at(1)},
		{TraceID: id(9, 16), SpanID: id(10, 8), ParentID: id(9, 8), Name: "db", Start: at(0), End: at(1)}}
	runs = BuildRuns(other)
	if len(runs) != 1 || runs[0].Summary.Spans != 2 || runs[0].Summary.Status != "ok" {
		t.Errorf("runs %+v", runs)
	}
	// A cycle of parents does not hang.
	a := &Span{TraceID: id(7, 16), SpanID: id(1, 8), ParentID: id(2, 8), Name: "invoke_agent a"}
	b := &Span{TraceID: id(7, 16), SpanID: id(2, 8), ParentID: id(1, 8), Name: "invoke_agent b"}
	BuildRuns([]*Span{a, b})
}

func TestHumanDuration(t *testing.T) {
	tests := map[string]string{"0s": "0s", "45µs": "45µs", "400µs": "0.4ms", "12.34ms": "12.3ms", "1.254s": "1.25s", "123s": "2m03s", "3h5m": "3h05m"}
	for in, want := range tests {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%s) = %s, want %s", in, got, want)
		}
	}
	if got := Thousands(-1234567); got != "-1,234,567" {
		t.Errorf("Thousands = %s", got)
	}
}
