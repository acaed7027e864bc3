package traceview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// The viewer's targets for a big trace file: the first page of runs
// within firstPageLimit, the process within rssLimit.
const (
	firstPageLimit = 5 * time.Second
	rssLimit       = 300 << 20
)

// envBig asks TestBigTraceFile for the full-size file: "1" for 250 MB,
// or a size in MB.
const envBig = "HARNESSX_VIEWER_BIG"

// envBigContent=off records the seed runs without their content
// (tracing.WithCaptureContent(false)): small spans, many more of them.
const envBigContent = "HARNESSX_VIEWER_BIG_CONTENT"

// envChild carries the trace file to the child process of
// TestBigTraceFile.
const envChild = "HARNESSX_VIEWER_CHILD"

// TestBigTraceFile generates a trace file of real runs (the tracing
// extension's spans, as exporters.NewFile writes them, repeated with new
// trace IDs, run IDs and times), then serves it in a child process with
// the viewer's handler and measures the time to the first page of runs,
// to one run's spans, and the child's peak RSS. By default the file is
// 16 MB and the numbers are only reported; with HARNESSX_VIEWER_BIG=1
// it is 250 MB (or HARNESSX_VIEWER_BIG=<MB>) and the targets are checked:
// first page under 5 s, peak RSS under 300 MB. HARNESSX_VIEWER_BIG_CONTENT=off
// records the runs without prompts and results: the same size in small
// spans.
func TestBigTraceFile(t *testing.T) {
	size, check := int64(16<<20), false
	if v := os.Getenv(envBig); v != "" {
		size, check = 250_000_000, true
		if mb, err := strconv.Atoi(v); err == nil && mb > 1 {
			size = int64(mb) * 1_000_000
		}
	}
	if testing.Short() && !check {
		t.Skip("generates a trace file")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "traces.jsonl")
	start := time.Now()
	runs := generateTraceFile(t, dir, path, size)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d runs, %.1f MB, in %s", runs, float64(fi.Size())/1e6, time.Since(start).Round(time.Millisecond))

	cmd := exec.Command(os.Args[0], "-test.run=^TestBigTraceFileChild$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"="+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	wall := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	childWall := time.Since(wall)
	maxRSS := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // Linux: KiB
	m := regexp.MustCompile(`RESULT first_page_ms=(\d+) runs=(\d+) total=(\d+) run_ms=(\d+) vmhwm_kb=(\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("child output:\n%s", out.String())
	}
	firstMS, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[3])
	runMS, _ := strconv.Atoi(m[4])
	hwm, _ := strconv.ParseInt(m[5], 10, 64)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("%.1f MB: first page (%s of %d runs) in %d ms, a run's spans in %d ms; peak RSS %.1f MB (VmHWM %.1f MB); child ran %s, %s of CPU",
		float64(fi.Size())/1e6, m[2], total, firstMS, runMS, float64(maxRSS)/(1<<20), float64(hwm<<10)/(1<<20),
		childWall.Round(time.Millisecond), cpu.Round(time.Millisecond))
	if total != runs {
		t.Errorf("the viewer lists %d runs of %d", total, runs)
	}
	if check {
		if time.Duration(firstMS)*time.Millisecond > firstPageLimit {
			t.Errorf("first page in %d ms, want under %s", firstMS, firstPageLimit)
		}
		if maxRSS > rssLimit {
			t.Errorf("peak RSS %d MB, want under %d MB", maxRSS>>20, rssLimit>>20)
		}
	}
}

// TestBigTraceFileChild is the child process of TestBigTraceFile: it
// serves the file named by HARNESSX_VIEWER_CHILD and prints what it
// measured.
func TestBigTraceFileChild(t *testing.T) {
	path := os.Getenv(envChild)
	if path == "" {
		t.Skip("run by TestBigTraceFile")
	}
	start := time.Now()
	h := Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{path}}})
	res := get(t, h, "127.0.0.1", "/api/runs?limit=50")
	var page struct {
		Runs     []runJSON `json:"runs"`
		Total    int       `json:"total"`
		Problems []string  `json:"problems"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if len(page.Runs) != 50 || len(page.Problems) != 0 {
		t.Fatalf("%d runs, problems %q", len(page.Runs), page.Problems)
	}
	start = time.Now()
	res = get(t, h, "127.0.0.1", "/api/runs/"+page.Runs[len(page.Runs)/2].Key)
	if res.StatusCode != 200 {
		t.Fatalf("a run: %d", res.StatusCode)
	}
	var run struct {
		Spans []spanJSON `json:"spans"`
	}
	if err := json.NewDecoder(res.Body).Decode(&run); err != nil || len(run.Spans) < 3 {
		t.Fatalf("a run: %d spans, %v", len(run.Spans), err)
	}
	runTime := time.Since(start)
	fmt.Printf("RESULT first_page_ms=%d runs=%d total=%d run_ms=%d vmhwm_kb=%d\n",
		first.Milliseconds(), len(page.Runs), page.Total, runTime.Milliseconds(), vmHWM())
}

// vmHWM returns the process's peak resident set size in KiB, from
// /proc/self/status (0 elsewhere).
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// seedRun records one real run with the tracing extension into its own
// trace file and returns the file's lines: steps model calls, each
// calling the tool (whose results are a few KB) but the last, which
// answers or, with fail, fails.
func seedRun(t *testing.T, path string, steps int, fail bool, rng *rand.Rand) []byte {
	t.Helper()
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx, exporters.WithFile(path), exporters.WithServiceName("support-bot"))
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("the order shipment was delayed at the warehouse because the carrier reported a missing label " +
		"customer asked for a refund and a new delivery date invoice total includes tax and shipping fees")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	type lookupIn struct {
		OrderID string `json:"order_id"`
	}
	tools := make([]*harness.Tool, 0, 3)
	for _, name := range []string{"lookup_order", "search_kb", "update_ticket"} {
		tool, err := harness.NewTool(name, "Look things up for the support agent: "+text(200),
			func(_ context.Context, in lookupIn) (string, error) { return text(300 + rng.IntN(3000)), nil })
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	var script []harnesstest.Response
	for i := range steps - 1 {
		script = append(script, harnesstest.Response{
			Text:      text(200),
			ToolCalls: []harness.ToolCall{harnesstest.Call(fmt.Sprintf("call_%d", i), []string{"lookup_order", "search_kb", "update_ticket"}[i%3], map[string]string{"order_id": "A-1042"})},
			Usage:     harness.Usage{InputTokens: int64(1200 + 900*i), OutputTokens: int64(40 + rng.IntN(80)), CacheReadInputTokens: int64(900 * i), CacheCreationInputTokens: 900},
		})
	}
	if fail {
		script = append(script, harnesstest.Response{Err: errors.New("upstream overloaded")})
	} else {
		script = append(script, harnesstest.Response{Text: text(600), Usage: harness.Usage{InputTokens: int64(1200 + 900*steps), OutputTokens: 150, CacheReadInputTokens: int64(900 * (steps - 1))}})
	}
	agent, err := harness.New(
		harness.WithName("support"),
		harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
		harness.WithModel("claude-sonnet-4-5"),
		harness.WithSystemPrompt("You are a support agent for an online shop. "+text(1500)),
		harness.WithTools(tools...),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithCaptureContent(os.Getenv(envBigContent) != "off"))),
	)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = agent.Run(ctx, "Where is my order A-1042? "+text(300))
	if err := agent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// template is a seed run's line cut where a copy differs: at its trace
// ID, its run ID and its times.
type template struct {
	lits  [][]byte // lits[i] comes before hole i; one more than holes
	holes []hole
	base  int64 // the earliest time of the seed
}

type hole struct {
	kind byte  // 't' trace ID, 'r' run ID, 'n' time
	ns   int64 // for a time: the seed's value
}

var (
	reTraceID = regexp.MustCompile(`"traceId":"([0-9a-f]{32})"`)
	reRunID   = regexp.MustCompile(`"key":"harnessx.run.id","value":\{"stringValue":"([^"]+)"\}`)
	reTime    = regexp.MustCompile(`"(?:startTimeUnixNano|endTimeUnixNano|timeUnixNano)":"(\d+)"`)
)

// newTemplate cuts the inner part of one seed line (the elements of its
// resourceSpans array).
func newTemplate(t *testing.T, inner []byte) *template {
	type cutAt struct {
		from, to int
		h        hole
	}
	var cuts []cutAt
	for _, m := range reTraceID.FindAllSubmatchIndex(inner, -1) {
		cuts = append(cuts, cutAt{m[2], m[3], hole{kind: 't'}})
	}
	for _, m := range reRunID.FindAllSubmatchIndex(inner, -1) {
		cuts = append(cuts, cutAt{m[2], m[3], hole{kind: 'r'}})
	}
	tp := &template{base: 1<<63 - 1}
	for _, m := range reTime.FindAllSubmatchIndex(inner, -1) {
		ns, err := strconv.ParseInt(string(inner[m[2]:m[3]]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		tp.base = min(tp.base, ns)
		cuts = append(cuts, cutAt{m[2], m[3], hole{kind: 'n', ns: ns}})
	}
	if len(cuts) == 0 {
		t.Fatal("a seed line without IDs or times")
	}
	slices.SortFunc(cuts, func(a, b cutAt) int { return a.from - b.from })
	prev := 0
	for _, c := range cuts {
		tp.lits = append(tp.lits, inner[prev:c.from])
		tp.holes = append(tp.holes, c.h)
		prev = c.to
	}
	tp.lits = append(tp.lits, inner[prev:])
	return tp
}

// write writes copy n of the template, starting at start.
func (tp *template) write(w *bufio.Writer, n int, start time.Time) {
	for i, h := range tp.holes {
		w.Write(tp.lits[i])
		switch h.kind {
		case 't':
			fmt.Fprintf(w, "7e57%028x", n)
		case 'r':
			fmt.Fprintf(w, "run-%08d", n)
		case 'n':
			w.WriteString(strconv.FormatInt(start.UnixNano()+h.ns-tp.base, 10))
		}
	}
	w.Write(tp.lits[len(tp.lits)-1])
}

// generateTraceFile writes about size bytes of runs to path, copies of
// real seed runs one to four to a line (as a batching exporter writes
// them), and returns how many runs it wrote.
func generateTraceFile(t *testing.T, dir, path string, size int64) int {
	rng := rand.New(rand.NewPCG(1, 2))
	var seeds []*template
	for i, shape := range []struct {
		steps int
		fail  bool
	}{{1, false}, {2, false}, {2, false}, {3, false}, {5, false}, {8, false}, {2, true}, {4, true}} {
		data := seedRun(t, filepath.Join(dir, fmt.Sprintf("seed%d.jsonl", i)), shape.steps, shape.fail, rng)
		// Each seed file holds one run; its lines' resource spans go
		// into one template.
		var inner [][]byte
		for line := range bytes.Lines(data) {
			line = bytes.TrimSpace(line)
			body, ok := bytes.CutPrefix(line, []byte(`{"resourceSpans":[`))
			body, ok2 := bytes.CutSuffix(body, []byte(`]}`))
			if !ok || !ok2 {
				t.Fatalf("unexpected seed line: %.100s", line)
			}
			inner = append(inner, body)
		}
		seeds = append(seeds, newTemplate(t, bytes.Join(inner, []byte(","))))
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	var written int64
	for written < size {
		w.WriteString(`{"resourceSpans":[`)
		for k := range 1 + rng.IntN(4) {
			if k > 0 {
				w.WriteByte(',')
			}
			seeds[rng.IntN(len(seeds))].write(w, n, start.Add(time.Duration(n)*3*time.Second))
			n++
		}
		w.WriteString("]}\n")
		written = int64(w.Buffered()) + written
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}
