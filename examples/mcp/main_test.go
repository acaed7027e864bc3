package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain serves MCP when the example starts the test binary as its
// server (os.Executable is the test binary here).
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-serve") {
		if err := serveStdio(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("HARNESSX_TRACES_FILE", filepath.Join(t.TempDir(), "traces.jsonl"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		`assistant → mcp_enable({"server":"notes"})`,
		"tool ← mcp_enable: Enabled MCP server notes (notes 1.0): 3 tools available from the next step on.",
		`assistant → notes__search_notes({"query":"deploy"})`,
		`tool ← notes__search_notes: 2 notes match "deploy"`,
		"- deploy freeze: No deploys on Fridays after 15:00.",
		"status: completed, steps: 3",
		"tools offered to the model: request 1 [mcp_enable]; request 2 [mcp_enable, notes__add_note, notes__delete_note, notes__search_notes]",
		"connected to notes 1.0, protocol 2026-07-28, enabled; 3 tools",
		"notes__delete_note [destructive, replay unsafe, asks]: Delete a note.",
		"execute_tool notes__search_notes",
		"mcp.method.name=tools/call network.transport=pipe mcp.protocol.version=2026-07-28 jsonrpc.request.id=",
		"traces: 6 spans to file " + os.Getenv("HARNESSX_TRACES_FILE"),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The server saw the traceparent of the tool span that the output names.
	seen := regexp.MustCompile(`server saw traceparent 00-[0-9a-f]{32}-([0-9a-f]{16})-01`).FindStringSubmatch(s)
	if seen == nil {
		t.Fatalf("no traceparent in the output:\n%s", s)
	}
	if !strings.Contains(s, "execute_tool notes__search_notes (span "+seen[1]+"): mcp.method.name=tools/call") {
		t.Errorf("the server's traceparent names span %s, not the tool span:\n%s", seen[1], s)
	}
}
