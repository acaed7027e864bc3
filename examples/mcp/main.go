package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/harnessx/harnessx/examples/mcp/internal/notes"
	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/traceview"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func main() {
	serve := flag.Bool("serve", false, "run the example's MCP server over stdio instead of the agent")
	flag.Parse()
	ctx := context.Background()
	if *serve {
		if err := serveStdio(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "mcp -serve:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

// serveStdio runs the notes server on standard input and output.
func serveStdio(ctx context.Context) error {
	return notes.New().Run(ctx, &sdk.StdioTransport{})
}

// serverCommand starts this program again as the MCP server. Under go run
// the program is a binary in go's cache, so this costs no second build.
func serverCommand() (mcp.Transport, error) {
	exe, err := os.Executable()
	if err != nil {
		return mcp.Transport{}, fmt.Errorf("cannot find this program to start its server: %w", err)
	}
	return mcp.CommandFunc(func() *exec.Cmd {
		cmd := exec.Command(exe, "-serve")
		cmd.Stderr = os.Stderr // the server's own errors
		return cmd
	}), nil
}

// script is the offline model: it enables the notes server, searches the
// notes, and answers from what it found.
func script() *harnesstest.ScriptedProvider {
	return harnesstest.NewScriptedProvider(
		harnesstest.Response{
			Text:      "Let me open the team's notes.",
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_1", mcp.EnableTool, map[string]string{"server": "notes"})},
		},
		harnesstest.Response{
			ToolCalls: []harness.ToolCall{harnesstest.Call("call_2", "notes__search_notes", map[string]string{"query": "deploy"})},
		},
		harnesstest.Reply("Run the migrations, deploy the API, then the workers — and never on a Friday after 15:00."),
	)
}

// run runs one traced turn and prints it.
func run(ctx context.Context, w io.Writer) (err error) {
	server, err := serverCommand()
	if err != nil {
		return err
	}
	warnings := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tp, err := exporters.FromEnv(ctx, exporters.WithLogger(warnings))
	if err != nil {
		return err
	}
	spans := tracetest.NewSpanRecorder()
	tp.SDK().RegisterSpanProcessor(spans)
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

	p := script()
	agent, err := harness.New(
		harness.WithName("mcp-example"),
		harness.WithProvider(p),
		harness.WithModel("scripted-model"),
		harness.WithLogger(warnings),
		harness.WithSystemPrompt("You answer questions about the team's procedures."),
		harness.WithExtensions(
			tracing.New(tracing.WithTracerProvider(tp)),
			mcp.New(mcp.WithServer("notes", server), mcp.WithCallTimeout(20*time.Second)),
		),
	)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := agent.Close(context.WithoutCancel(ctx)); err == nil {
			err = cerr
		}
	}()

	question := "How do we deploy?"
	res, err := agent.Run(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "user: %s\n", question)
	printTranscript(w, res.Messages[1:])
	fmt.Fprintf(w, "\nstatus: %s, steps: %d\n", res.Status, res.Steps)
	reqs := p.Requests()
	fmt.Fprintf(w, "tools offered to the model: request 1 %s; request 2 %s\n",
		names(reqs[0].Tools), names(reqs[1].Tools))

	cmd, err := agent.Run(ctx, "/mcp")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n> /mcp\n%s\n", cmd.Text)

	serr := shutdown()
	stats, backends := tp.Stats(), tp.Backends()
	tp = nil
	if serr != nil && !errors.Is(serr, exporters.ErrSpansLost) && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}
	ended := spans.Ended()
	runs := traceview.BuildRuns(traceview.FromSDK(ended))
	if len(runs) > 0 {
		fmt.Fprintln(w, "\nspans:")
		if err := traceview.WriteTree(w, runs[0], traceview.TreeOptions{}); err != nil {
			return err
		}
	}
	printMCPAttributes(w, ended)
	printDestinations(w, backends, stats)
	return nil
}

// printMCPAttributes shows what the adapter added to the tool spans.
func printMCPAttributes(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		var kv []string
		for _, a := range s.Attributes() {
			k := string(a.Key)
			if strings.HasPrefix(k, "mcp.") || strings.HasPrefix(k, "jsonrpc.") || k == "network.transport" {
				kv = append(kv, k+"="+a.Value.Emit())
			}
		}
		if len(kv) > 0 {
			fmt.Fprintf(w, "%s (span %s): %s\n", s.Name(), s.SpanContext().SpanID(), strings.Join(kv, " "))
		}
	}
}

func names(defs []harness.ToolDefinition) string {
	n := make([]string, len(defs))
	for i, d := range defs {
		n[i] = d.Name
	}
	return "[" + strings.Join(n, ", ") + "]"
}

func printTranscript(w io.Writer, msgs []harness.Message) {
	for _, m := range msgs {
		for _, p := range m.Content {
			switch p.Type {
			case harness.PartText:
				fmt.Fprintf(w, "%s: %s\n", m.Role, strings.TrimSpace(p.Text))
			case harness.PartToolCall:
				fmt.Fprintf(w, "%s → %s(%s)\n", m.Role, p.ToolCall.Name, p.ToolCall.Input)
			case harness.PartToolResult:
				fmt.Fprintf(w, "tool ← %s: %s\n", p.ToolResult.Name, strings.ReplaceAll(p.ToolResult.Content, "\n", "\n    "))
			}
		}
	}
}

// printDestinations says where the spans went and how to look at them.
func printDestinations(w io.Writer, backends []exporters.Backend, st exporters.Stats) {
	fmt.Fprintln(w)
	for i, b := range backends {
		var bs exporters.BackendStats
		if i < len(st.Backends) {
			bs = st.Backends[i]
		}
		fmt.Fprintf(w, "traces: %d spans to %s %s\n", bs.Exported, b.Name, b.Target)
		if b.Name == "file" {
			flag := ""
			if os.Getenv("HARNESSX_TRACES_FILE") != "" {
				flag = " --traces " + b.Target
			}
			fmt.Fprintf(w, "  see this run again: go run ./cmd/flightrec trace --last%s\n", flag)
		}
	}
	if len(backends) == 0 {
		fmt.Fprintln(w, "traces: not exported (OTEL_TRACES_EXPORTER=none)")
	}
}
