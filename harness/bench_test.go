package harness_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

type weatherIn struct {
	City string `json:"city"`
}

func weather(_ context.Context, in weatherIn) (string, error) { return "sunny in " + in.City, nil }

var benchScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	{Text: "It is sunny in Paris.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}},
}

// BenchmarkFloor is a bare hand-written loop doing the work of one
// BenchmarkRun: two scripted model replies, one JSON argument decode, one
// tool function call.
func BenchmarkFloor(b *testing.B) {
	p := harnesstest.NewScriptedProvider(benchScript...)
	p.Loop, p.DiscardRequests = true, true
	ctx := context.Background()
	req := &harness.ModelRequest{Model: "m"}
	b.ReportAllocs()
	for b.Loop() {
		msgs := []harness.Message{harness.UserMessage("weather?")}
		req.Messages = msgs
		resp, _ := p.Generate(ctx, req)
		msgs = append(msgs, resp.Message)
		call := resp.Message.Content[0].ToolCall
		var in weatherIn
		if err := json.Unmarshal(call.Input, &in); err != nil {
			b.Fatal(err)
		}
		out, _ := weather(ctx, in)
		msgs = append(msgs, harness.Message{Role: harness.RoleTool, Content: []harness.Part{{Type: harness.PartToolResult,
			ToolResult: &harness.ToolResult{CallID: call.ID, Name: call.Name, Content: out}}}})
		req.Messages = msgs
		resp, _ = p.Generate(ctx, req)
		if resp.Message.Text() == "" {
			b.Fatal("no text")
		}
	}
}

// BenchmarkRun is one agent.Run of two scripted model calls and one tool call.
func BenchmarkRun(b *testing.B) { benchRun(b) }

// benchRun measures one agent.Run of benchScript by an agent with opts.
func benchRun(b *testing.B, opts ...harness.Option) {
	p := harnesstest.NewScriptedProvider(benchScript...)
	p.Loop, p.DiscardRequests = true, true
	opts = append([]harness.Option{harness.WithProvider(p), harness.WithModel("m"),
		harness.WithTools(harness.MustTool(harness.NewTool("weather", "Weather of a city.", weather)))}, opts...)
	a, err := harness.New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(ctx, "weather?")
		if err != nil || res.Text == "" {
			b.Fatal(err, res)
		}
		a.Reset()
	}
}

// observer is an extension whose hooks receive the events a recorder
// observes (the flight recorder's: a run's, its model requests' and its
// tool calls' start and end) and do nothing with them.
type observer struct{}

func (observer) Name() string { return "observer" }

func (observer) Install(ec *harness.ExtensionContext) error {
	for _, ev := range []harness.HookEvent{harness.EventRunStart, harness.EventRunEnd,
		harness.EventModelRequestStart, harness.EventModelRequestEnd, harness.EventToolCallStart, harness.EventToolCallEnd} {
		if _, err := ec.OnHook(ev, func(context.Context, *harness.Event) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkRunObserved is BenchmarkRun with hooks that receive a run's
// start and end events and its model requests' and tool calls' (and do
// nothing): what the engine spends on the events an observer such as the
// flight recorder receives, beside the observer's own work. It also
// computes the prefix keys, which a model request hook may read (see
// PrefixKeyUser).
func BenchmarkRunObserved(b *testing.B) { benchRun(b, harness.WithExtensions(observer{})) }

// imageScript is three model steps: two tool calls, then the answer.
var imageScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	harnesstest.CallTool("call_2", "weather", `{"city":"Lyon"}`),
	{Text: "A map of France; sunny in Paris and Lyon.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}},
}

// BenchmarkRunWithImage is one agent.RunMessage of three scripted model
// steps whose user message carries an image of 50 KiB or 5 MiB. The image
// is made once; each run builds its part (a new Media, whose SHA-256 the
// prefix key would compute in every run, as for a new image; nothing reads
// the key here, so it is not computed: see harness.PrefixKeyUser). bytes/image is
// the allocated bytes per run over the image size, which stays far below
// 1: the history and the three requests share the bytes. The scripted
// provider encodes nothing; the base64 encoding a real provider does once
// per request is measured by BenchmarkRunWithImage in providers/anthropic.
func BenchmarkRunWithImage(b *testing.B) {
	for _, size := range []int{50 << 10, 5 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			img := make([]byte, size)
			for i := range img {
				img[i] = byte(i * 31)
			}
			p := harnesstest.NewScriptedProvider(imageScript...)
			p.Loop, p.DiscardRequests = true, true
			a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"),
				harness.WithTools(harness.MustTool(harness.NewTool("weather", "Weather of a city.", weather))))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			before := m.TotalAlloc
			for b.Loop() {
				res, err := a.RunMessage(ctx, harness.UserParts(harness.Text("what is this?"), harness.ImagePart(img, "image/png")))
				if err != nil || res.Steps != 3 {
					b.Fatal(err, res)
				}
				a.Reset()
			}
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.TotalAlloc-before)/float64(b.N)/float64(size), "bytes/image")
		})
	}
}
