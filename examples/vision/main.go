package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vision:", err)
		os.Exit(1)
	}
}

// drawScene returns a size×size PNG: a red-to-blue gradient with a white
// square in the middle.
func drawScene(size int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			c := color.RGBA{R: uint8(255 * (size - x) / size), B: uint8(255 * x / size), A: 255}
			if x > size/3 && x < 2*size/3 && y > size/3 && y < 2*size/3 {
				c = color.RGBA{R: 255, G: 255, B: 255, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	err := png.Encode(&b, img)
	return b.Bytes(), err
}

// zoom returns the centre of a PNG, scaled up by factor.
func zoom(data []byte, factor int) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	r := src.Bounds()
	w, h := r.Dx()/factor, r.Dy()/factor
	x0, y0 := r.Min.X+(r.Dx()-w)/2, r.Min.Y+(r.Dy()-h)/2
	dst := image.NewRGBA(image.Rect(0, 0, w*factor, h*factor))
	for y := range h * factor {
		for x := range w * factor {
			dst.Set(x, y, src.At(x0+x/factor, y0+y/factor))
		}
	}
	var b bytes.Buffer
	err = png.Encode(&b, dst)
	return b.Bytes(), err
}

type zoomInput struct {
	Factor int `json:"factor" jsonschema:"how many times to enlarge the centre, 2 to 8"`
}

// run runs the demo and writes its report to w.
func run(ctx context.Context, w io.Writer) (err error) {
	scene, err := drawScene(96)
	if err != nil {
		return err
	}
	zoomTool, err := harness.NewTool("zoom", "Enlarge the centre of the user's picture.",
		func(_ context.Context, in zoomInput) (harness.ToolOutput, error) {
			closer, err := zoom(scene, max(2, min(in.Factor, 8)))
			if err != nil {
				return harness.ToolOutput{}, err
			}
			return harness.ToolOutput{
				Text:  fmt.Sprintf("the centre, enlarged %d times", in.Factor),
				Parts: []harness.Part{harness.ImagePart(closer, "image/png").Named("zoom.png")},
			}, nil
		})
	if err != nil {
		return err
	}

	warnings := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tp, err := exporters.FromEnv(ctx, exporters.WithLogger(warnings))
	if err != nil {
		return err
	}
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return tp.Shutdown(sctx)
	}
	defer func() {
		if tp != nil {
			_ = shutdown()
		}
	}()

	// The scripted model asks for a closer look, then answers.
	model := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("call_zoom", "zoom", map[string]any{"factor": 3}),
		harnesstest.Reply("A gradient from red on the left to blue on the right, with a white square in the middle; "+
			"the zoom shows the square is plain white, with no detail inside."),
	)
	// A hook checks, for every model request, that the images it carries
	// are the bytes the program holds, not copies.
	var requests, shared int
	check := func(_ context.Context, ev *harness.Event) error {
		requests++
		if m := ev.Request.Messages[0].Content[1].Media; &m.Data[0] == &scene[0] {
			shared++
		}
		return nil
	}
	agent, err := harness.New(
		harness.WithName("vision"),
		harness.WithProvider(model),
		harness.WithModel("scripted-model"),
		harness.WithSystemPrompt("You describe pictures. Use zoom for details."),
		harness.WithTools(zoomTool),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
		harness.WithHook(harness.EventModelRequestStart, check),
	)
	if err != nil {
		return err
	}
	question := harness.UserParts(harness.Text("What is in this picture?"), harness.ImagePart(scene, "image/png").Named("scene.png"))
	res, err := agent.RunMessage(ctx, question)
	if cerr := agent.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	printTranscript(w, res.Messages)
	fmt.Fprintf(w, "\nstatus: %s, steps: %d\n", res.Status, res.Steps)
	fmt.Fprintf(w, "the user's image was the same bytes in %d of %d model requests\n", shared, requests)

	serr := shutdown()
	stats := tp.Stats()
	backends := tp.Backends()
	tp = nil
	if serr != nil && !errors.Is(serr, exporters.ErrSpansLost) && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}
	fmt.Fprintln(w)
	for i, b := range backends {
		var n int64
		if i < len(stats.Backends) {
			n = stats.Backends[i].Exported
		}
		fmt.Fprintf(w, "traces: %d spans to %s %s\n", n, b.Name, b.Target)
	}
	return nil
}

func printTranscript(w io.Writer, msgs []harness.Message) {
	for _, m := range msgs {
		for _, p := range m.Content {
			switch p.Type {
			case harness.PartText:
				fmt.Fprintf(w, "%s: %s\n", m.Role, p.Text)
			case harness.PartToolCall:
				fmt.Fprintf(w, "%s → %s(%s)\n", m.Role, p.ToolCall.Name, p.ToolCall.Input)
			case harness.PartToolResult:
				fmt.Fprintf(w, "tool ← %s: %s\n", p.ToolResult.Name, p.ToolResult.Content)
				for _, rp := range p.ToolResult.Parts {
					fmt.Fprintf(w, "tool ← %s: %s\n", p.ToolResult.Name, describe(rp))
				}
			default:
				fmt.Fprintf(w, "%s: %s\n", m.Role, describe(p))
			}
		}
	}
}

// describe shows a part without its bytes.
func describe(p harness.Part) string {
	if p.Media == nil {
		return p.Text
	}
	h := p.Media.SHA256()
	return fmt.Sprintf("[%s %s %q, %d bytes, sha256 %s…]", p.Type, p.Media.MIME, p.Media.Name, p.Media.Size(), h.String()[:12])
}
