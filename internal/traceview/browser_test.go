package traceview

import (
	"context"
	"fmt"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts a headless Chromium for the test, or skips the test when
// there is none (and fails it on CI, which installs one).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/chromium"); serr == nil {
			path, err = "/usr/bin/chromium", nil
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is not installed (CI installs it in .ci/run): %v", err)
		}
		t.Skipf("chromium is not installed: %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

type row struct {
	Depth  string `json:"depth"`
	Name   string `json:"name"`
	ID     string `json:"id"`
	Parent string `json:"parent"`
}

// waitFor polls the page until the JavaScript expression cond is true.
func waitFor(ctx context.Context, cond string) error {
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", cond, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// visible waits for an element matching the CSS selector to be rendered.
func visible(ctx context.Context, sel string) error {
	return waitFor(ctx, "(e => e && e.getClientRects().length > 0)(document.querySelector("+strconv.Quote(sel)+"))")
}

// click clicks the first element matching the CSS selector.
func click(ctx context.Context, sel string) error {
	if err := visible(ctx, sel); err != nil {
		return err
	}
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("(document.querySelector("+strconv.Quote(sel)+").click(), true)"))
	return err
}

// text returns the text of the first element matching the CSS selector.
func text(ctx context.Context, sel string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string]("document.querySelector("+strconv.Quote(sel)+").innerText"))
}

const rowsJS = `[...document.querySelectorAll('#waterfall .span-row')].map(r => ({depth: r.dataset.depth, name: r.dataset.name, id: r.dataset.spanId, parent: r.dataset.parentId}))`

func TestBrowserWaterfall(t *testing.T) {
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	recordRun(t, file, "weather", "Lisbon: 18°C, light rain")
	srv := httptest.NewServer(Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}}}))
	defer srv.Close()
	ctx := browser(t)

	must := must(t)
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(visible(ctx, `#runs tbody tr`))
	runText, err := text(ctx, `#runs tbody tr`)
	must(err)
	must(click(ctx, `#runs tbody tr`))
	must(visible(ctx, `#waterfall .span-row`))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](rowsJS))
	must(err)
	// The second row is the first chat span.
	must(click(ctx, `#waterfall .span-row:nth-child(2)`))
	must(visible(ctx, `#panel #usage`))
	usage, err := text(ctx, `#panel #usage`)
	must(err)
	prefix, err := text(ctx, `#panel #prefix-key`)
	must(err)
	if !strings.Contains(runText, "weather") || !strings.Contains(runText, "880 / 53") {
		t.Errorf("run list row %q", runText)
	}
	if len(rows) != 4 {
		t.Fatalf("waterfall rows %+v", rows)
	}
	root := rows[0]
	if root.Depth != "0" || root.Name != "invoke_agent weather" || root.Parent != "" {
		t.Errorf("root row %+v", root)
	}
	wantNames := []string{"chat scripted-model", "execute_tool get_weather", "chat scripted-model"}
	for i, r := range rows[1:] {
		if r.Depth != "1" || r.Parent != root.ID || r.Name != wantNames[i] {
			t.Errorf("row %d: %+v, want %s at depth 1 under %s", i+1, r, wantNames[i], root.ID)
		}
	}
	for _, want := range []string{"input tokens", "412", "cache write", "380", "output tokens", "31"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage panel %q lacks %q", usage, want)
		}
	}
	// The session's first request: the key and its parts, none changed.
	if !strings.Contains(prefix, "tools") || !strings.Contains(prefix, "system") || strings.Contains(prefix, "changed") {
		t.Errorf("prefix key panel %q", prefix)
	}
}

// newSystemFromStep2 gives the run's model requests from the second on
// another system prompt: a cache break on the system part at the second.
type newSystemFromStep2 struct{}

func (newSystemFromStep2) BeforeModelRequest(_ context.Context, req *harness.ModelRequest) error {
	if req.Step >= 2 {
		req.System = "You are a verbose weather assistant."
	}
	return nil
}

// TestBrowserCacheBreak: the chat span of the session's first request
// shows the key and the four part hashes, the one whose request broke the
// prompt cache shows them with the changed one marked and says so, and the
// one after it, which kept the prefix, shows the key alone.
func TestBrowserCacheBreak(t *testing.T) {
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	call := func(id string) harnesstest.Response {
		return harnesstest.Response{ToolCalls: []harness.ToolCall{harnesstest.Call(id, "get_weather", map[string]string{"city": "Lisbon"})}}
	}
	recordRunWith(t, runSetup{path: file, agent: "weather", result: "Lisbon: 18°C",
		script: []harnesstest.Response{call("call_1"), call("call_2"), harnesstest.Reply("18°C.")},
		opts:   []harness.Option{harness.WithMiddleware(newSystemFromStep2{})}})
	srv := httptest.NewServer(Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}}}))
	defer srv.Close()
	ctx := browser(t)
	must := must(t)
	// panel opens the span of waterfall row n and returns its prefix panel
	// once it shows want.
	panel := func(n int, want string) string {
		t.Helper()
		must(click(ctx, fmt.Sprintf(`#waterfall .span-row:nth-child(%d)`, n)))
		must(waitFor(ctx, `document.querySelector('#panel #prefix-key') && document.querySelector('#panel #prefix-key').innerText.includes(`+strconv.Quote(want)+`)`))
		p, err := text(ctx, `#panel #prefix-key`)
		must(err)
		return p
	}
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(click(ctx, `#runs tbody tr`))
	must(visible(ctx, `#waterfall .span-row`))
	// Rows: the agent, then chat, tool, chat, tool, chat.
	first := panel(2, "system")
	if !strings.Contains(first, "tools") || strings.Contains(first, "changed") || strings.Contains(first, "no cache break") {
		t.Errorf("first request's prefix panel:\n%s", first)
	}
	second := panel(4, "changed")
	for _, want := range []string{"model", "tools", "system (changed: broke the cache)", "messages"} {
		if !strings.Contains(second, want) {
			t.Errorf("second request's prefix panel lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "no cache break") || strings.Contains(second, "tools (changed") {
		t.Errorf("second request's prefix panel:\n%s", second)
	}
	note, err := text(ctx, `#panel p.changed`)
	must(err)
	if note != "cache break: system" {
		t.Errorf("cache break note %q", note)
	}
	// The third kept the prefix: the key alone on its span, the parts as
	// the break recorded them.
	third := panel(6, "no cache break")
	if !strings.Contains(third, "as recorded on chat scripted-model at +") || strings.Contains(third, "changed:") {
		t.Errorf("third request's prefix panel:\n%s", third)
	}
	for _, k := range []string{"model", "tools", "system", "messages"} {
		if got, want := partRow(third, k), partRow(second, k); got == "" || got != want {
			t.Errorf("third request's %s part %q, want the break's %q", k, got, want)
		}
	}
}

// partRow returns the hash on the row of part k of a prefix panel's text
// (a row is "name<TAB>value"; the break's rows say "(changed: …)").
func partRow(panel, k string) string {
	for _, line := range strings.Split(panel, "\n") {
		name, value, ok := strings.Cut(line, "\t")
		if ok && (name == k || strings.HasPrefix(name, k+" (")) {
			return value
		}
	}
	return ""
}

func TestBrowserHostileInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	const (
		img    = `<img src=x onerror="window.__pwned='img'">`
		script = `<script>window.__pwned='script'</script>`
	)
	huge := strings.Repeat("A", 5<<20)
	recordRun(t, file, img, script+img+huge)
	srv := httptest.NewServer(Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}}}))
	defer srv.Close()
	ctx := browser(t)

	must := must(t)
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	must(visible(ctx, `#runs tbody tr`))
	listText, err := text(ctx, `#runs tbody`)
	must(err)
	must(click(ctx, `#runs tbody tr`))
	must(click(ctx, `#waterfall .span-row.op-execute_tool`))
	must(visible(ctx, `#panel .note`))
	panelText, err := text(ctx, `#panel`)
	must(err)
	note, err := text(ctx, `#panel .note`)
	must(err)
	preLen, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Math.max(...[...document.querySelectorAll('#panel pre')].map(p => p.textContent.length))`))
	must(err)
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('img').length`))
	must(err)
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('script').length`))
	must(err)
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned !== undefined`))
	must(err)
	if !strings.Contains(listText, img) {
		t.Errorf("run list does not show the agent name as text: %q", listText)
	}
	if !strings.Contains(panelText, script) || !strings.Contains(panelText, img) {
		t.Errorf("the tool result is not shown as text")
	}
	if imgs != 0 || scripts != 1 || pwned {
		t.Errorf("markup from the data took effect: %d img, %d script elements, script ran: %v", imgs, scripts, pwned)
	}
	if !strings.Contains(note, "truncated") || !strings.Contains(note, "5,242,9") {
		t.Errorf("truncation note %q", note)
	}
	if preLen > DefaultMaxAttrBytes+1000 {
		t.Errorf("a value of %d characters reached the page", preLen)
	}
}
