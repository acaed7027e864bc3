// Command conformance is the client that the MCP conformance suite
// (npm @modelcontextprotocol/conformance) tests: an agent whose only
// extension of note is the MCP adapter, with one streamable HTTP server,
// the one the suite starts for a scenario.
//
//	conformance <server-url>
//
// The suite runs it once per client scenario, with the scenario's name in
// MCP_CONFORMANCE_SCENARIO and, for some scenarios, a JSON object in
// MCP_CONFORMANCE_CONTEXT (a preregistered client's credentials, tool
// calls to make). The agent's model is a script: it enables the server
// (which connects, authorizing with OAuth when the server asks, and lists
// the tools), then calls the scenario's tools through the adapter, then
// stops. Elicitations are answered in-process: confirm yes, the first
// option of a select, "{}" for a form (the SDK fills the defaults).
//
// It exits 1 when the server cannot be enabled or a tool the scenario
// needs is missing. The adapter's log goes to standard error, which the
// suite keeps with the scenario's results.
//
// It is CI code, not a harnessx command: it lives under
// extensions/mcp/internal, beside the adapter it tests, and
// TestConformanceSuite (in this directory) builds and runs it under the
// suite; .ci/mcp-conformance.sh installs the suite and runs that test.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// serverName is the name the client gives the suite's server; its tools
// are "conf__<tool>".
const serverName = "conf"

// runTimeout bounds a scenario's run: the suite gives a client 30 s and
// then waits for it to exit, so a client that hangs past that only makes
// the suite slower. A scenario takes a few seconds.
const runTimeout = 25 * time.Second

func main() {
	if err := run(os.Args[1:], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

// scenarioContext is what MCP_CONFORMANCE_CONTEXT may hold.
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	ToolCalls    []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

func run(args []string, scenario, rawCtx string) error {
	if len(args) != 1 {
		return errors.New("usage: conformance <server-url>")
	}
	if scenario == "" {
		return errors.New("MCP_CONFORMANCE_SCENARIO is not set")
	}
	var sc scenarioContext
	if rawCtx != "" {
		if err := json.Unmarshal([]byte(rawCtx), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))

	tr := mcp.StreamableHTTP(args[0]).WithOAuth(mcp.OAuth{
		ClientName:          "harnessx conformance client",
		ClientIDMetadataURL: "https://conformance-test.local/client-metadata.json",
		ClientID:            sc.ClientID,
		ClientSecret:        sc.ClientSecret,
		Prompt:              followRedirects,
	})
	d := &driver{scenario: scenario, ctx: sc}
	a, err := harness.New(
		harness.WithProvider(d),
		harness.WithLogger(log),
		harness.WithStorage(harnesstest.NewMemoryStorage()),
		harness.WithStepRunner(answerer{}),
		harness.WithExtensions(mcp.New(mcp.WithServer(serverName, tr)), trust{}),
	)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	defer a.Close(context.WithoutCancel(ctx))
	res, err := a.Run(ctx, "run the conformance scenario "+scenario)
	if err != nil {
		return err
	}
	for _, m := range res.Messages {
		for _, p := range m.Content {
			if r := p.ToolResult; r != nil {
				log.Info("tool result", "call", r.CallID, "error", r.IsError, "content", oneLine(r.Content))
			}
		}
	}
	return d.err
}

// followRedirects plays the user who authorizes in a browser: the
// suite's authorization server redirects at once to the adapter's
// loopback listener.
func followRedirects(ctx context.Context, _, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// driver is the model: it enables the server, then calls the scenario's
// tools (all in one step, in order), then stops.
type driver struct {
	scenario string
	ctx      scenarioContext
	step     int
	err      error
}

func (d *driver) Generate(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	d.step++
	switch d.step {
	case 1:
		return calls(harnesstest.Call("enable", mcp.EnableTool, map[string]string{"server": serverName})), nil
	case 2:
		if r := lastResult(req); r == nil || r.IsError {
			d.err = fmt.Errorf("enabling the server failed: %v", r)
			return reply("the server could not be enabled"), nil
		}
		tcs, err := d.toolCalls(req.Tools)
		if err != nil {
			d.err = err
			return reply(err.Error()), nil
		}
		if len(tcs) == 0 {
			return reply("done"), nil
		}
		return calls(tcs...), nil
	}
	return reply("done"), nil
}

// toolCalls are the calls of the scenario, made from the offered tools.
func (d *driver) toolCalls(defs []harness.ToolDefinition) ([]harness.ToolCall, error) {
	tools := map[string]harness.ToolDefinition{}
	var order []string
	for _, def := range defs {
		if name, ok := strings.CutPrefix(def.Name, serverName+mcp.Separator); ok {
			tools[name] = def
			order = append(order, name)
		}
	}
	var out []harness.ToolCall
	call := func(name string, input any) {
		out = append(out, harnesstest.Call(fmt.Sprintf("c%d", len(out)+1), serverName+mcp.Separator+name, input))
	}
	need := func(names ...string) error {
		for _, n := range names {
			if _, ok := tools[n]; !ok {
				return fmt.Errorf("the server offers no tool %q (it offers %s)", n, strings.Join(order, ", "))
			}
		}
		return nil
	}
	empty := map[string]any{}
	switch s := d.scenario; {
	case s == "tools_call":
		if err := need("add_numbers"); err != nil {
			return nil, err
		}
		call("add_numbers", map[string]any{"a": 5, "b": 3})
	case s == "elicitation-sep1034-client-defaults":
		if err := need("test_client_elicitation_defaults"); err != nil {
			return nil, err
		}
		call("test_client_elicitation_defaults", empty)
	case s == "sse-retry":
		if err := need("test_reconnection"); err != nil {
			return nil, err
		}
		call("test_reconnection", empty)
	case strings.HasPrefix(s, "auth/"):
		if _, ok := tools["test-tool"]; ok {
			call("test-tool", empty)
		}
	case s == "json-schema-2020-12-preservation":
		if err := need("json_schema_2020_12_tool", "json_schema_echo"); err != nil {
			return nil, err
		}
		call("json_schema_echo", map[string]any{"schema": json.RawMessage(tools["json_schema_2020_12_tool"].InputSchema)})
	case s == "sep-2322-client-request-state":
		for _, n := range order {
			if strings.HasPrefix(n, "test_mrtr_") {
				call(n, empty)
			}
		}
	case s == "http-standard-headers":
		if len(order) > 0 {
			call(order[0], empty)
		}
	case s == "http-custom-headers":
		// The suite passes null for an optional parameter it wants
		// omitted; the harness checks a model's arguments against the
		// tool's schema and refuses null for a boolean, so this "model"
		// leaves null arguments out, as a model would after that error.
		for _, tc := range d.ctx.ToolCalls {
			args := map[string]any{}
			for k, v := range tc.Arguments {
				if v != nil {
					args[k] = v
				}
			}
			call(tc.Name, args)
		}
	case s == "http-invalid-tool-headers":
		for _, n := range order {
			call(n, map[string]any{"region": "us-west1"})
		}
	}
	return out, nil
}

func lastResult(req *harness.ModelRequest) *harness.ToolResult {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, p := range req.Messages[i].Content {
			if p.ToolResult != nil {
				return p.ToolResult
			}
		}
	}
	return nil
}

func calls(tcs ...harness.ToolCall) *harness.ModelResponse {
	parts := make([]harness.Part, len(tcs))
	for i := range tcs {
		parts[i] = harness.Part{Type: harness.PartToolCall, ToolCall: &tcs[i]}
	}
	return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: parts}, StopReason: harness.StopToolUse}
}

func reply(text string) *harness.ModelResponse {
	return &harness.ModelResponse{
		Message:    harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{{Type: harness.PartText, Text: text}}},
		StopReason: harness.StopEndTurn,
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// answerer runs the steps directly and answers the adapter's questions
// (elicitations) in-process, as a user who accepts would.
type answerer struct{ harness.DirectRunner }

var _ harness.Asker = answerer{}

func (answerer) Ask(_ context.Context, _ *harness.Step, req harness.AskRequest) (harness.Answer, error) {
	switch req.Kind {
	case harness.AskConfirm:
		return harness.Answer{Confirmed: true}, nil
	case harness.AskSelect:
		return harness.Answer{Choice: req.Options[0]}, nil
	}
	if strings.Contains(req.Prompt, "JSON object") {
		return harness.Answer{Text: "{}"}, nil
	}
	return harness.Answer{Text: ""}, nil
}

// trust is an extension whose tool transform marks the suite's tools
// replay safe: harness.AskUser asks only from a replay-safe tool, and
// this client trusts its server.
type trust struct{}

func (trust) Name() string { return "conformance-trust" }

func (trust) Install(ec *harness.ExtensionContext) error {
	_, err := ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
		for i, t := range tools {
			if strings.HasPrefix(t.Name, serverName+mcp.Separator) && t.ReplayPolicy != harness.ReplaySafe {
				c := *t
				c.ReplayPolicy = harness.ReplaySafe
				tools[i] = &c
			}
		}
		return tools
	})
	return err
}
