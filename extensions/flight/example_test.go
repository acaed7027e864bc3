package flight_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A failing run exports an incident bundle by itself.
func Example() {
	dir, _ := os.MkdirTemp("", "flight-example")
	defer os.RemoveAll(dir)

	rec := flight.New(flight.WithDir(dir))
	agent, _ := harness.New(
		harness.WithSessionID("example"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.Fail(errors.New("upstream overloaded")),
		)),
		harness.WithExtensions(rec),
	)
	res, _ := agent.Run(context.Background(), "hello")
	agent.Close(context.Background())

	b, err := flight.ReadBundleFile(rec.Incidents()[0], flight.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", res.Status)
	fmt.Println("verify:", b.Verify())
	fmt.Println("reason:", b.Manifest.Reason)
	fmt.Println("events:", b.Manifest.Counts)
	// Output:
	// run: failed
	// verify: <nil>
	// reason: run_failure
	// events: map[error:1 model_request:1 model_response:1 run_end:1 run_start:1]
}

// ExportJournal builds a bundle from a recording on disk, as flightrec
// export does, for instance after the process crashed.
func ExampleExportJournal() {
	dir, _ := os.MkdirTemp("", "flight-example")
	defer os.RemoveAll(dir)

	rec := flight.New(flight.WithDir(dir))
	agent, _ := harness.New(
		harness.WithSessionID("s1"),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("hi"))),
		harness.WithExtensions(rec),
	)
	agent.Run(context.Background(), "my key is sk-ant-api03-EXAMPLE0000SECRET")
	agent.Close(context.Background())

	var buf bytes.Buffer
	m, err := flight.ExportJournal(context.Background(), filepath.Join(dir, "s1"), &buf, flight.ExportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("events:", m.Events, "redacted:", m.Redaction.Counts)
	// Output:
	// events: 4 redacted: map[anthropic-key:2]
}

// Bundles are read with verification of every member; secrets were
// redacted before anything was written.
func ExampleReadBundle() {
	dir, _ := os.MkdirTemp("", "flight-example")
	defer os.RemoveAll(dir)

	rec := flight.New(flight.WithDir(dir))
	agent, _ := harness.New(
		harness.WithSessionID("s1"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("hi"))),
		harness.WithExtensions(rec),
	)
	agent.Run(context.Background(), "Authorization: Bearer abcdefgh123")
	agent.Close(context.Background())
	var buf bytes.Buffer
	if _, err := flight.ExportJournal(context.Background(), filepath.Join(dir, "s1"), &buf, flight.ExportOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	b, err := flight.ReadBundle(&buf, flight.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	evs, _ := b.Events()
	fmt.Println(b.Verify(), evs[0].Text)
	// Output:
	// <nil> Authorization: Bearer [REDACTED:bearer-token]
}

// Trigger exports a bundle on demand, here with the spans of an SDK
// TracerProvider that carries the recorder's span processor.
func ExampleExtension_Trigger() {
	dir, _ := os.MkdirTemp("", "flight-example")
	defer os.RemoveAll(dir)

	rec := flight.New(flight.WithDir(dir))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
	defer tp.Shutdown(context.Background())
	agent, _ := harness.New(
		harness.WithSessionID("s1"),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("hi"))),
		harness.WithExtensions(rec),
	)
	defer agent.Close(context.Background())

	ctx, span := tp.Tracer("app").Start(context.Background(), "request")
	agent.Run(ctx, "hello")
	span.End()

	path, err := rec.Trigger(context.Background(), "operator asked")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := flight.ReadBundleFile(path, flight.ReadOptions{})
	fmt.Println(filepath.Base(filepath.Dir(path)), b.Manifest.Reason, b.Manifest.Events, "events,", b.Manifest.Spans, "span")
	// Output:
	// incidents operator asked 4 events, 1 span
}
