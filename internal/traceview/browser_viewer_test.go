package traceview

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// syntheticRuns is how many made-up runs viewerFixture writes before its
// two real ones: more than a page.
const syntheticRuns = 60

// viewerFixture writes a trace file with syntheticRuns made-up runs, a
// priced run of a real agent and a failed one (a model error without a
// Go type) recorded by a flight recorder, whose incident bundle goes
// under the returned flight directory. It returns the viewer's server.
func viewerFixture(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "traces.jsonl")
	flightDir := filepath.Join(dir, "flight")
	for n := range syntheticRuns {
		appendFile(t, file, otlpLine(t, synthRun(t, 2*n, int64(n)*1000)...)) // even: completed
	}
	recordRunWith(t, runSetup{path: file, agent: "priced", result: "Lisbon: 18°C, light rain", model: "claude-sonnet-4-5"})
	rec := flight.New(flight.WithDir(flightDir))
	recordRunWith(t, runSetup{
		path: file, agent: "unlucky", result: "Lisbon: 18°C", model: "claude-sonnet-4-5", mayFail: true,
		fileOpts: []exporters.Option{exporters.WithSpanProcessor(rec.SpanProcessor())},
		exts:     []harness.Extension{rec},
		script: []harnesstest.Response{
			{ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", "get_weather", map[string]string{"city": "Lisbon"})},
				Usage: harness.Usage{InputTokens: 412, OutputTokens: 31}},
			{Err: errors.New("upstream overloaded")},
		},
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		paths, _ := filepath.Glob(filepath.Join(flightDir, "*", "incidents", "*.tar.gz"))
		if len(paths) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flight recorder wrote no incident bundle")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv := httptest.NewServer(Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}, FlightDirs: []string{flightDir}}}))
	t.Cleanup(srv.Close)
	return srv
}

// must fails the test on an error.
func must(t *testing.T) func(error) {
	return func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// boxJS measures the elements of a selector: each one's box, whether it
// lies within the nav pane and the window, and whether its content
// overflows it.
const boxJS = `((sel) => { const nav = document.querySelector('nav').getBoundingClientRect();
  return [...document.querySelectorAll(sel)].map(e => { const r = e.getBoundingClientRect();
    return {sel, text: e.innerText, left: r.left, right: r.right, width: r.width,
      inside: r.width > 0 && r.left >= nav.left - 0.5 && r.right <= nav.right + 0.5 && r.right <= window.innerWidth,
      overflow: e.scrollWidth > e.clientWidth + 1}; }); })`

type box struct {
	Sel      string  `json:"sel"`
	Text     string  `json:"text"`
	Left     float64 `json:"left"`
	Right    float64 `json:"right"`
	Width    float64 `json:"width"`
	Inside   bool    `json:"inside"`
	Overflow bool    `json:"overflow"`
}

// midWordJS returns, for the elements of a selector, the places where a
// rendered line breaks between two characters of a word (neither a space,
// nor after a dot, underscore, slash or hyphen of a dotted name), as
// "prev|next"; and how many elements wrap at all.
const midWordJS = `((sel) => { const bad = []; let wrapped = 0;
  for (const el of document.querySelectorAll(sel)) {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); let prevTop = null, prev = '', lines = 1;
    for (let n; (n = w.nextNode());) for (let i = 0; i < n.data.length; i++) {
      const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
      const rs = r.getClientRects(); if (!rs.length) continue;
      const top = rs[0].top, c = n.data[i];
      if (prevTop !== null && top > prevTop + 2) { lines++; if (!/[\s._\/-]/.test(prev) && !/\s/.test(c)) bad.push(el.innerText + ': ' + prev + '|' + c); }
      prevTop = top; prev = c;
    }
    if (lines > 1) wrapped++;
  }
  return {bad, wrapped, count: document.querySelectorAll(sel).length}; })`

type breaks struct {
	Bad     []string `json:"bad"`
	Wrapped int      `json:"wrapped"`
	Count   int      `json:"count"`
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// kvValue returns the value of the row labelled key in the kv table sel.
func kvValue(t *testing.T, ctx context.Context, sel, key string) string {
	return eval[string](t, ctx, `(() => { for (const tr of document.querySelectorAll(`+strconv.Quote(sel+" tr")+`))
	  if (tr.cells[0].innerText.trim() === `+strconv.Quote(key)+`) return tr.cells[1].innerText; return '<none>'; })()`)
}

// TestBrowserRunList: at 1,280 px the run list shows every column, the
// cost among them, states read ok or error and error types by name; it
// pages through the runs, newest first.
func TestBrowserRunList(t *testing.T) {
	srv := viewerFixture(t)
	ctx := browser(t)
	must := must(t)
	must(chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(visible(ctx, `#runs tbody tr`))
	must(waitFor(ctx, `document.querySelector('#page-info').innerText.includes('of')`))

	for _, sel := range []string{`#runs th`, `#runs tr[data-agent=unlucky] td`, `#runs tr[data-agent=priced] td`, `#runs tr[data-agent=weather] td`, `#runs tr.error-row td`} {
		for _, b := range eval[[]box](t, ctx, boxJS+"("+strconv.Quote(sel)+")") {
			if !b.Inside || b.Overflow {
				t.Errorf("at 1280 px %s %q: left %.0f right %.0f width %.0f, inside %v, overflows %v", sel, b.Text, b.Left, b.Right, b.Width, b.Inside, b.Overflow)
			}
		}
	}
	if sw := eval[int](t, ctx, `(n => n.scrollWidth - n.clientWidth)(document.querySelector('nav'))`); sw > 0 {
		t.Errorf("the run list scrolls sideways by %d px", sw)
	}
	head, err := text(ctx, `#runs thead`)
	must(err)
	for _, col := range []string{"spans", "tokens in / out", "cost", "errors"} {
		if !strings.Contains(head, col) {
			t.Errorf("header %q lacks %s", head, col)
		}
	}

	// Newest first: the failed run (with what failed on a line of its
	// own), then the priced one.
	failed, err := text(ctx, `#runs tbody tr:nth-child(1)`)
	must(err)
	detail, err := text(ctx, `#runs tbody tr:nth-child(2)`)
	must(err)
	failed += " " + detail
	priced, err := text(ctx, `#runs tbody tr:nth-child(3)`)
	must(err)
	if !strings.Contains(failed, "unlucky") || !strings.Contains(failed, "error") || !strings.Contains(failed, "upstream overloaded") ||
		strings.Contains(failed, "_OTHER") || !strings.Contains(failed, "$") {
		t.Errorf("failed run row %q", failed)
	}
	if !strings.Contains(priced, "priced") || !strings.Contains(priced, "ok") || !regexpMatch(`\$0\.\d{1,4}[1-9]`, priced) ||
		strings.Contains(priced, "unset") || strings.Contains(priced, "completed") {
		t.Errorf("priced run row %q", priced)
	}
	states := eval[[]string](t, ctx, `[...document.querySelectorAll('#runs td.state')].map(e => e.innerText)`)
	for _, s := range states {
		if s != "ok" && s != "error" {
			t.Errorf("state %q", s)
		}
	}

	// Pages: 62 runs, 50 a page.
	total := syntheticRuns + 2
	pageInfo := func() string { s, _ := text(ctx, `#page-info`); return s }
	if got, want := pageInfo(), "1–50 of "+strconv.Itoa(total); got != want {
		t.Errorf("page info %q, want %q", got, want)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#runs tbody tr.run').length`); n != 50 {
		t.Errorf("%d rows on the first page", n)
	}
	if !eval[bool](t, ctx, `document.querySelector('#newer').disabled`) {
		t.Error("Newer is enabled on the first page")
	}
	must(click(ctx, `#older`))
	must(waitFor(ctx, `document.querySelector('#page-info').innerText.startsWith('51')`))
	if n := eval[int](t, ctx, `document.querySelectorAll('#runs tbody tr.run').length`); n != total-50 {
		t.Errorf("%d rows on the second page", n)
	}
	// The oldest run is last.
	last, err := text(ctx, `#runs tbody tr.run:last-child`)
	must(err)
	if !strings.Contains(last, "weather") || !eval[bool](t, ctx, `document.querySelector('#older').disabled`) {
		t.Errorf("last row %q", last)
	}
	must(click(ctx, `#newer`))
	must(waitFor(ctx, `document.querySelector('#page-info').innerText.startsWith('1–50')`))
	eval[bool](t, ctx, `(s => (s.value = '25', s.dispatchEvent(new Event('change')), true))(document.querySelector('#page-size'))`)
	must(waitFor(ctx, `document.querySelector('#page-info').innerText.startsWith('1–25 ')`))
	if n := eval[int](t, ctx, `document.querySelectorAll('#runs tbody tr.run').length`); n != 25 {
		t.Errorf("%d rows with 25 a page", n)
	}
}

// TestBrowserRunAndLabels: a run's header and usage box show its cost,
// spans read ok or error, and labels wrap only between words.
func TestBrowserRunAndLabels(t *testing.T) {
	srv := viewerFixture(t)
	ctx := browser(t)
	must := must(t)
	must(chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(click(ctx, `#runs tr[data-agent=priced]`))
	must(visible(ctx, `#run-head`))
	head, err := text(ctx, `#run-head`)
	must(err)
	if !regexpMatch(`· ok ·.*cost \$0\.\d*[1-9]`, head) || strings.Contains(head, "completed") {
		t.Errorf("run header %q", head)
	}
	if got := kvValue(t, ctx, "#panel .kv", "status"); got != "ok" {
		t.Errorf("the root span's status %q", got)
	}
	must(click(ctx, `#waterfall .span-row:nth-child(2)`)) // a chat span
	must(visible(ctx, `#panel #usage`))
	if got := kvValue(t, ctx, "#usage", "cost"); !regexpMatch(`^\$0\.\d*[1-9]$`, got) || len(got) > 10 {
		t.Errorf("usage box cost %q", got)
	}
	if got := kvValue(t, ctx, "#panel .kv", "status"); got != "ok" {
		t.Errorf("the chat span's status %q", got)
	}

	for _, width := range []int64{1280, 1000} {
		must(chromedp.Do(ctx, chromedp.EmulateViewport(width, 800)))
		labels := `#panel .kv td:first-child, #panel .attr-key, #runs th, #incidents th, #run-head`
		b := eval[breaks](t, ctx, midWordJS+"("+strconv.Quote(labels)+")")
		if b.Count < 20 {
			t.Fatalf("%d labels", b.Count)
		}
		if len(b.Bad) > 0 {
			t.Errorf("at %d px labels break inside words: %q", width, b.Bad)
		}
		// "operation" is one line, as tall as "kind".
		h := eval[[]float64](t, ctx, `['operation', 'kind'].map(k => [...document.querySelectorAll('#panel .kv td:first-child')].find(td => td.innerText.trim() === k).getBoundingClientRect().height)`)
		if math.Abs(h[0]-h[1]) > 1 {
			t.Errorf("at %d px the label operation is %.1f px tall, kind %.1f px", width, h[0], h[1])
		}
		t.Logf("at %d px: %d labels, %d wrap (between words)", width, b.Count, b.Wrapped)
	}
}

// TestBrowserIncident: the failed run links to its incident bundle; the
// incident shows as a table (trigger, time, run, error, files) and links
// back to the run.
func TestBrowserIncident(t *testing.T) {
	srv := viewerFixture(t)
	ctx := browser(t)
	must := must(t)
	must(chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)))
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(click(ctx, `#runs tr[data-agent=unlucky]`))
	must(visible(ctx, `#run-head`))
	head, err := text(ctx, `#run-head`)
	must(err)
	runID := strings.Fields(head)[1]
	if !strings.Contains(head, "· error ·") || !strings.Contains(head, "upstream overloaded") || strings.Contains(head, "_OTHER") {
		t.Errorf("run header %q", head)
	}
	if got := kvValue(t, ctx, "#panel .kv", "status"); !strings.HasPrefix(got, "error: ") {
		t.Errorf("the failed root span's status %q", got)
	}
	runHash := eval[string](t, ctx, `location.hash`)
	must(click(ctx, `#run-incidents a.incident-link`))
	must(visible(ctx, `#incident-facts`))
	facts := map[string]string{}
	for _, k := range []string{"trigger", "time", "agent", "run", "error", "checksums"} {
		facts[k] = kvValue(t, ctx, "#incident-facts", k)
	}
	if facts["trigger"] != "run_failure" || !strings.HasPrefix(facts["time"], "20") || facts["agent"] != "unlucky" ||
		!strings.Contains(facts["run"], runID) || !strings.Contains(facts["error"], "upstream overloaded") || facts["checksums"] != "verified" {
		t.Errorf("incident facts %q (run %s)", facts, runID)
	}
	files := eval[[]string](t, ctx, `[...document.querySelectorAll('#incident-files tbody tr td:first-child')].map(e => e.innerText)`)
	for _, want := range []string{"manifest.json", "events.jsonl", "spans.json"} {
		if !strings.Contains(strings.Join(files, " "), want) {
			t.Errorf("files %q lack %s", files, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#incident pre').length`); n != 1 ||
		eval[bool](t, ctx, `document.querySelector('#incident details').open`) {
		t.Error("the manifest's JSON is not folded away")
	}
	// The incident list is a table too, naming the trigger, the run and
	// the error.
	row, err := text(ctx, `#incidents tbody tr`)
	must(err)
	if !strings.Contains(row, "run_failure") || !strings.Contains(row, runID) || !strings.Contains(row, "upstream overloaded") {
		t.Errorf("incident row %q", row)
	}
	// Back to the run.
	must(click(ctx, `#incident-facts a.run-link`))
	must(waitFor(ctx, `location.hash === `+strconv.Quote(runHash)))
	must(visible(ctx, `#waterfall .span-row`))
	again, err := text(ctx, `#run-head`)
	must(err)
	if !strings.Contains(again, runID) {
		t.Errorf("after the link: %q", again)
	}
}
