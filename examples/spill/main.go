package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "spill:", err)
		os.Exit(1)
	}
}

// exportCSV generates an orders export of n rows: a few megabytes.
func exportCSV(n int) string {
	countries := []string{"PT", "JP", "FR", "DE", "BR", "US", "IN"}
	statuses := []string{"paid", "paid", "paid", "shipped", "refunded", "pending"}
	var b strings.Builder
	b.Grow(n * 70)
	b.WriteString("order_id,placed_at,customer,country,amount,status\n")
	for i := range n {
		status := statuses[(i*7)%len(statuses)]
		if i%9973 == 4242 {
			status = "disputed"
		}
		fmt.Fprintf(&b, "%d,2026-%02d-%02dT%02d:%02d:00Z,customer-%05d,%s,%d.%02d,%s\n",
			100000+i, 1+i%12, 1+i%28, i%24, i%60, (i*31)%20000, countries[i%len(countries)], 5+(i*13)%495, i%100, status)
	}
	return b.String()
}

var resultID = regexp.MustCompile(`res_[0-9a-f]{24}`)

// run runs the demo. With HARNESSX_ARTIFACTS set (read with getenv), the
// results go to that S3-compatible store instead of a temporary
// directory.
func run(ctx context.Context, w io.Writer, getenv func(string) string) error {
	export, err := harness.NewTool("export_orders", "Export every order as CSV.",
		func(context.Context, struct{}) (string, error) { return exportCSV(80_000), nil })
	if err != nil {
		return err
	}
	// The scripted model first calls the export. Once it has read the
	// envelope (see the hook below) it queries the stored result.
	model := harnesstest.NewScriptedProvider(harnesstest.CallTool("call_export", "export_orders", map[string]any{}))
	queries := func(id string) []harnesstest.Response {
		return []harnesstest.Response{
			harnesstest.CallTool("call_search", spill.ToolName, map[string]any{
				"id": id, "op": "search", "pattern": ",disputed$", "context": 1, "max_matches": 3}),
			harnesstest.CallTool("call_slice", spill.ToolName, map[string]any{
				"id": id, "op": "slice", "offset": 4241, "limit": 3}),
			harnesstest.CallTool("call_count", spill.ToolName, map[string]any{
				"id": id, "op": "count", "where": []any{
					map[string]any{"column": "country", "op": "eq", "value": "JP"},
					map[string]any{"column": "status", "op": "eq", "value": "refunded"},
					map[string]any{"column": "amount", "op": "gt", "value": 250},
				}}),
			harnesstest.Reply("The first disputed orders are 104242 (customer-11502, PT), 114215 and 124188; " +
				"Japan has 960 refunded orders above 250."),
		}
	}
	onResult := func(_ context.Context, ev *harness.Event) error {
		if ev.ToolCall.Name == "export_orders" {
			model.Push(queries(resultID.FindString(ev.ToolResult.Content))...)
		}
		return nil
	}
	opts := []spill.Option{spill.WithThreshold(32_000)}
	if getenv(s3store.EnvArtifacts) != "" {
		store, err := openStore(ctx, getenv)
		if err != nil {
			return err
		}
		// Close applies the retention (HARNESSX_ARTIFACTS_ON_CLOSE and the
		// expiry limits) once the agent is done; the spill extension never
		// deletes from a store it was given.
		defer store.Close(ctx)
		fmt.Fprintf(w, "artifact store: %s\n\n", store)
		opts = append(opts, spill.WithStore(store))
	}
	ext := spill.New(opts...)
	agent, err := harness.New(
		harness.WithName("spill-demo"),
		harness.WithProvider(model),
		harness.WithModel("scripted-model"),
		harness.WithTools(export),
		harness.WithExtensions(ext),
		harness.WithHook(harness.EventToolCallEnd, onResult),
	)
	if err != nil {
		return err
	}
	defer agent.Close(ctx)

	question := "Find the disputed orders and count Japan's large refunds."
	res, err := agent.Run(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "user: %s\n", question)
	for _, m := range res.Messages[1:] {
		for _, p := range m.Content {
			switch p.Type {
			case harness.PartText:
				fmt.Fprintf(w, "\nassistant: %s\n", p.Text)
			case harness.PartToolCall:
				fmt.Fprintf(w, "\nassistant → %s %s\n", p.ToolCall.Name, p.ToolCall.Input)
			case harness.PartToolResult:
				fmt.Fprintf(w, "%s ←\n%s\n", p.ToolResult.Name, indent(p.ToolResult.Content))
			}
		}
	}
	for _, m := range ext.Results() {
		fmt.Fprintf(w, "\nstored: %s from %s, %d bytes (%s), sha256 %s…\n", m.ID, m.Tool, m.Size, m.Type, m.SHA256[:16])
	}
	return nil
}

// openStore opens the S3 artifact store that the environment names and
// checks that its bucket and credentials work.
func openStore(ctx context.Context, getenv func(string) string) (*s3store.Store, error) {
	cfg, err := s3store.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	store, err := s3store.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := store.Check(ctx); err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	return store, nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
