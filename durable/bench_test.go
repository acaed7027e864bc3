package durable

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// benchFactory builds an agent with a fake model (a tool call, then an
// answer) and a no-op tool: what is left is the runtime's cost. The tool
// and the provider are built once, as the package doc advises (a tool's
// schema is inferred and compiled when it is made); the factory builds
// only the agent's options.
func benchFactory() Factory { return benchFactoryWith(nil) }

// benchFactoryWith adds the extensions that newExts makes for each run.
func benchFactoryWith(newExts func() []harness.Extension) Factory {
	type in struct{}
	tool := harness.MustTool(harness.NewTool("noop", "noop", func(context.Context, in) (string, error) { return "ok", nil }))
	provider := harness.ProviderFunc(func(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
		if req.Step == 1 {
			return callMsg(harnesstest.Call("c1", "noop", map[string]any{})), nil
		}
		return reply("done"), nil
	})
	return func(ctx context.Context) ([]harness.Option, error) {
		opts := []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1"), harness.WithTools(tool)}
		if newExts != nil {
			opts = append(opts, harness.WithExtensions(newExts()...))
		}
		return opts, nil
	}
}

// counterExt is an extension with state that every tool call changes:
// each run writes one engine snapshot.
type counterExt struct{ n atomic.Int64 }

func (e *counterExt) Name() string { return "counter" }
func (e *counterExt) Install(ec *harness.ExtensionContext) error {
	_, err := ec.OnHook(harness.EventToolCallEnd, func(context.Context, *harness.Event) error { e.n.Add(1); return nil })
	return err
}
func (e *counterExt) OnSaveSession(context.Context, *harness.ExtensionContext) (any, error) {
	return e.n.Load(), nil
}
func (e *counterExt) OnLoadSession(_ context.Context, _ *harness.ExtensionContext, raw json.RawMessage) error {
	var n int64
	err := json.Unmarshal(raw, &n)
	e.n.Store(n)
	return err
}

// benchDSN is a fresh database of the backend for a benchmark.
func benchDSN(b *testing.B, backend string) string {
	if backend == "postgres" {
		return freshPostgres(b)
	}
	return "sqlite:" + filepath.Join(b.TempDir(), "runs.db")
}

// BenchmarkDurableRun is one durable run on SQLite and on Postgres
// (HARNESSX_POSTGRES_DSN): model → tool → model, recorded (three steps,
// plus the run's execution count and the tool call's marker in the steps
// table), and the wait for its result. Compare
// with BenchmarkDBOSFloor.
func BenchmarkDurableRun(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDurableRun(b, benchDSN(b, backend), benchFactory()) })
	}
}

// BenchmarkDurableRunWithState is BenchmarkDurableRun with an extension
// whose state the tool call changes: the engine snapshots encode it after
// each of the three steps and write it once.
func BenchmarkDurableRunWithState(b *testing.B) {
	f := benchFactoryWith(func() []harness.Extension { return []harness.Extension{&counterExt{}} })
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDurableRun(b, benchDSN(b, backend), f) })
	}
}

// BenchmarkDurableRunWithImage is BenchmarkDurableRun with a tool that
// returns a 1 MiB image: the tool step records a reference and writes
// the image once to the blobs table, and the finished run deletes it.
func BenchmarkDurableRunWithImage(b *testing.B) {
	img := planted(1<<20, 3, toolPlant)
	type in struct{}
	tool := harness.MustTool(harness.NewTool("snap", "snap", func(context.Context, in) (harness.ToolOutput, error) {
		return harness.ToolOutput{Text: "ok", Parts: []harness.Part{harness.ImagePart(img, "image/png")}}, nil
	}))
	provider := harness.ProviderFunc(func(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
		if req.Step == 1 {
			return callMsg(harnesstest.Call("c1", "snap", map[string]any{})), nil
		}
		return reply("done"), nil
	})
	f := func(ctx context.Context) ([]harness.Option, error) {
		return []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1"), harness.WithTools(tool)}, nil
	}
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDurableRun(b, benchDSN(b, backend), f) })
	}
}

func benchDurableRun(b *testing.B, dsn string, f Factory, opts ...Option) {
	ctx := context.Background()
	rt, err := Open(ctx, dsn, append([]Option{WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	if err := rt.Register("bench", f); err != nil {
		b.Fatal(err)
	}
	if err := rt.Launch(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		res, err := rt.Run(ctx, "bench", "go", WithRunID("b"+strconv.Itoa(i)))
		if err != nil || res.Text != "done" {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// floorWorkflow is a bare DBOS workflow with the same three steps: a
// model-like step, a tool-like step, a model-like step.
func floorWorkflow(ctx dbos.Context, in string) (string, error) {
	m1, err := dbos.RunAsStep(ctx, func(context.Context) (*harness.ModelResponse, error) {
		return callMsg(harnesstest.Call("c1", "noop", map[string]any{})), nil
	}, dbos.WithStepName("model/1"))
	if err != nil {
		return "", err
	}
	t, err := dbos.RunAsStep(ctx, func(context.Context) (*harness.ToolResult, error) {
		return &harness.ToolResult{CallID: m1.Message.ToolCalls()[0].ID, Name: "noop", Content: "ok"}, nil
	}, dbos.WithStepName("tool/1/c1"))
	if err != nil {
		return "", err
	}
	m2, err := dbos.RunAsStep(ctx, func(context.Context) (*harness.ModelResponse, error) {
		return reply("done"), nil
	}, dbos.WithStepName("model/2"))
	if err != nil {
		return "", err
	}
	return m2.Message.Text() + t.Content[:0], nil
}

// BenchmarkDBOSFloor is the floor: the same three steps in a bare DBOS
// workflow on SQLite and on Postgres, started and awaited.
func BenchmarkDBOSFloor(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDBOSFloor(b, benchDSN(b, backend)) })
	}
}

func benchDBOSFloor(b *testing.B, dsn string) {
	ctx := context.Background()
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "floor", DatabaseURL: dsn,
		ApplicationVersion: "floor-1", ExecutorID: "local", Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer dbos.Shutdown(dctx, 10*time.Second)
	dbos.RegisterWorkflow(dctx, floorWorkflow, dbos.WithWorkflowName("floor"))
	if err := dbos.Launch(dctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		h, err := dbos.RunWorkflow(dctx, floorWorkflow, "go", dbos.WithWorkflowID("f"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if out, err := h.GetResult(); err != nil || out != "done" {
			b.Fatalf("%q %v", out, err)
		}
	}
}
