package traceview

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/harness"
	"go.opentelemetry.io/otel/attribute"
)

// uriPart is a part as the tracing extension records it in
// gen_ai.input.messages: a GenAI uri part naming the bytes by reference.
func uriPart(data []byte, mime string) map[string]any {
	return map[string]any{"type": "uri", "modality": "image", "mime_type": mime, "uri": uri(data), "size": len(data),
		"sha256": hex.EncodeToString(sha256Of(data))}
}

// tracePartsRun writes one invoke_agent span whose input messages carry
// parts by reference into the trace file at path.
func tracePartsRun(t *testing.T, path string, parts ...map[string]any) {
	t.Helper()
	ctx := context.Background()
	tp, err := exporters.NewFile(ctx, exporters.WithFile(path), exporters.WithServiceName("traceview-test"))
	if err != nil {
		t.Fatal(err)
	}
	content := []any{map[string]any{"type": "text", "content": "compare these"}}
	for _, p := range parts {
		content = append(content, p)
	}
	msgs, _ := json.Marshal([]any{map[string]any{"role": "user", "parts": content}})
	_, span := tp.Tracer("test").Start(ctx, "invoke_agent viewer")
	span.SetAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "viewer"),
		attribute.String("gen_ai.input.messages", string(msgs)))
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// figure is what the page shows of one part.
type figure struct {
	Ref      string `json:"ref"`
	Img      bool   `json:"img"`
	Src      string `json:"src"`
	Width    int    `json:"width"`
	Complete bool   `json:"complete"`
	Download string `json:"download"`
	Broken   bool   `json:"broken"`
}

const figuresJS = `[...document.querySelectorAll(%q)].map(f => { const i = f.querySelector('img'), a = f.querySelector('a.download');
  return {ref: f.dataset.ref, img: !!i, src: i ? i.getAttribute('src') : '', width: i ? i.naturalWidth : 0, complete: i ? i.complete : true,
    download: a ? a.getAttribute('href') : '', broken: f.classList.contains('broken')}; })`

// TestBrowserParts: an image part shows as a thumbnail served by the
// viewer; a hostile SVG and HTML labelled image/png never run, in the span
// panel, in an incident's events, or opened directly: they show as a
// download link or a broken image, and the page stays where it was.
func TestBrowserParts(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	pic := pngBytes(t, 6, 4)
	svg, html := []byte(hostileSVG), []byte(hostileHTML)
	svgAsPNG := []byte(strings.Replace(hostileSVG, "red", "blue", 1))
	// The trace names the parts; the recording keeps their bytes.
	tracePartsRun(t, file, uriPart(pic, "image/png"), uriPart(svg, "image/svg+xml"), uriPart(html, "image/png"), uriPart(svgAsPNG, "image/png"))
	writeParts(t, filepath.Join(root, "rec-a"), pic, svg, html, svgAsPNG)
	// An incident bundle of a real recorder holds them too.
	bundleWithParts(t, root, "rec-b", harness.ImagePart(pic, "image/png"), harness.ImagePart(svg, "image/svg+xml"),
		harness.ImagePart(html, "image/png"))
	srv := httptest.NewServer(Handler(HandlerOptions{Sources: Sources{TraceFiles: []string{file}, FlightDirs: []string{root}}}))
	defer srv.Close()
	ctx := browser(t)

	must := must(t)
	var dialogs atomic.Int32
	opened := make(chan struct{}, 16)
	must(chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			select {
			case opened <- struct{}{}:
			default:
			}
		}
	}))
	go func() { // a dialog would block the page: dismiss it, counted
		for {
			select {
			case <-ctx.Done():
				return
			case <-opened:
				chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}
		}
	}()
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny})
	must(err)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(localStorage.clear(), true)`))
	must(err)

	check := func(where string, figs []figure) {
		t.Helper()
		byRef := map[string]figure{}
		for _, f := range figs {
			byRef[f.Ref] = f
		}
		if f := byRef[uri(pic)]; !f.Img || f.Width != 6 || f.Src != "/parts/"+fileName(pic)+"?type=image%2Fpng" {
			t.Errorf("%s: the PNG is not a thumbnail: %+v", where, f)
		}
		if f, ok := byRef[uri(svg)]; ok && (f.Img || f.Download != "/parts/"+fileName(svg)) {
			t.Errorf("%s: the SVG is not a download link: %+v", where, f)
		}
		for _, bad := range [][]byte{html, svgAsPNG} {
			if f, ok := byRef[uri(bad)]; ok && (f.Width != 0 || !f.Broken) {
				t.Errorf("%s: a mislabelled part shows: %+v", where, f)
			}
		}
	}
	figuresDone := func(sel string) []figure {
		t.Helper()
		js := strings.Replace(figuresJS, "%q", `'`+sel+`'`, 1)
		must(waitFor(ctx, js+`.every(f => f.complete) && `+js+`.length > 0`))
		// A failed image reports its error after it is complete.
		must(waitFor(ctx, js+`.every(f => !f.img || f.width > 0 || f.broken)`))
		figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]figure](js))
		must(err)
		return figs
	}

	// The span panel.
	must(click(ctx, `#runs tbody tr`))
	must(visible(ctx, `#panel figure.part`))
	figs := figuresDone("#panel figure.part")
	if len(figs) != 4 {
		t.Errorf("span panel shows %d parts: %+v", len(figs), figs)
	}
	check("span panel", figs)

	// An incident's events.
	must(click(ctx, `#incidents tbody tr`))
	must(visible(ctx, `#incident figure.part`))
	figs = figuresDone("#incident figure.part")
	if len(figs) == 0 {
		t.Fatal("the incident shows no part")
	}
	check("incident", figs)

	here, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.origin + location.pathname`))
	must(err)
	if here != srv.URL+"/" {
		t.Errorf("the page navigated to %s", here)
	}

	// Opened directly, the hostile parts are downloads (denied here) or
	// plain-text refusals, never documents that run.
	for _, p := range []string{
		"/parts/" + fileName(svg) + "?type=image/svg%2Bxml",
		"/parts/" + fileName(svg),
		"/parts/" + fileName(html) + "?type=image/png",
		"/parts/" + fileName(html) + "?type=text/html",
		"/parts/" + fileName(svgAsPNG) + "?type=image/png",
	} {
		chromedp.Do(ctx, chromedp.Navigate(srv.URL+p)) // a download aborts the navigation
		ct, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.contentType + " " + location.pathname`))
		must(err)
		if strings.Contains(ct, "/parts/") && !strings.HasPrefix(ct, "text/plain ") {
			t.Errorf("%s opened as %s", p, ct)
		}
	}
	must(chromedp.Do(ctx, chromedp.Navigate(srv.URL)))
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(localStorage.getItem('pwned')) + " " + String(window.__pwned)`))
	must(err)
	if pwned != "null undefined" {
		t.Errorf("a part's script ran: %s", pwned)
	}
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
}
