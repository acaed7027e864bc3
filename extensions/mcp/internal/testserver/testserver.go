// Package testserver is the MCP server the mcp extension's tests run,
// in-process over the SDK's in-memory transport and, built from
// ./mcptestserver, as a stdio subprocess. Its tools cover what the adapter
// must handle: annotations, error results, a huge result, a malformed
// schema, a call that never ends, a request for user input, media content
// (the tool "media", good and malformed), and (in the subprocess only) a
// crash.
package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options select the tools that are not always there.
type Options struct {
	// Crash adds the tool "crash", which exits the process in the middle
	// of the call, and "env", which returns the process's environment.
	// Only for a server run as a subprocess.
	Crash bool
	// Protocol, when set, is the only protocol version the server speaks
	// (an older one makes it ask for input with elicitation/create
	// requests instead of multi-round-trip results).
	Protocol string
}

// Echo is the result of the echo tool.
type Echo struct {
	Text string `json:"text"`
	// Traceparent and Tracestate are what the call's params._meta carried.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes to return"`
}

type pathIn struct {
	Path string `json:"path"`
}

type deployIn struct {
	Env string `json:"env"`
}

type none struct{}

// BrokenSchema is the input schema of the tool "broken": an object schema
// whose property has a type that is not a string, which no JSON schema
// library accepts.
const BrokenSchema = `{"type":"object","properties":{"q":{"type":42}}}`

func yes() *bool { return new(true) }

// The resource the tool "link" links to, and its text.
const (
	NotesURI  = "notes://today"
	NotesText = "Buy milk. Call the plumber."
)

// New returns the server.
func New(opts Options) *mcp.Server {
	so := &mcp.ServerOptions{Instructions: "A server for tests."}
	if opts.Protocol != "" {
		so.SupportedProtocolVersions = []string{opts.Protocol}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "0.1"}, so)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Send the text back, with the trace context received.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			e := Echo{Text: in.Text}
			if m := req.Params.Meta; m != nil {
				e.Traceparent, _ = m["traceparent"].(string)
				e.Tracestate, _ = m["tracestate"].(string)
			}
			b, _ := json.Marshal(e)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return that many bytes of numbered lines.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Lines(in.Bytes)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			r := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is on fire"}}}
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "remove", Description: "Remove a file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: yes()}},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			return text("removed " + in.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Set a file's time to now.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathIn) (*mcp.CallToolResult, any, error) {
			return text("touched " + in.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Append a note (no annotations)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("noted " + in.Text), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "broken", Description: "A tool whose input schema is malformed.",
		InputSchema: json.RawMessage(BrokenSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("broken ran"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers (until cancelled).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	safe := &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "deploy", Description: "Deploy after asking the user to confirm.", Annotations: safe}, deploy)
	mcp.AddTool(s, &mcp.Tool{Name: "deploy_unannotated", Description: "Deploy after asking; not replay safe."}, deploy)
	mcp.AddTool(s, &mcp.Tool{Name: "deploy_legacy", Description: "Deploy after asking with elicitation/create.", Annotations: safe},
		func(ctx context.Context, req *mcp.CallToolRequest, in deployIn) (*mcp.CallToolResult, any, error) {
			er, err := req.Session.Elicit(ctx, deployQuestion(in.Env))
			if err != nil {
				return nil, nil, err
			}
			return deployed(in.Env, er), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report progress twice, then answer.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return text("no progress token"), nil, nil
			}
			for i, msg := range []string{"halfway", "almost"} {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i + 1), Total: 3, Message: msg,
				}); err != nil {
					return nil, nil, err
				}
			}
			// The client handles notifications in order before it answers
			// a request: after this ping, it has seen both.
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, nil, err
			}
			return text("finished"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress_fast", Description: "Report progress three times and answer at once.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := range 3 {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i + 1), Total: 3, Message: fmt.Sprintf("step %d", i+1),
				}); err != nil {
					return nil, nil, err
				}
			}
			return text("fast"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log", Description: "Log a message to the client during the call.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "worker", Data: in.Text}); err != nil {
				return nil, nil, err
			}
			return text("logged"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "link", Description: "Answer with a link to a resource.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{Name: "today", URI: NotesURI}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{Name: "today", URI: NotesURI, MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: NotesText}}}, nil
		})
	addMedia(s)
	if opts.Crash {
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server in the middle of the call."},
			func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
				os.Exit(3)
				return nil, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "The server's environment, one variable a line.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
				return text(strings.Join(os.Environ(), "\n")), nil, nil
			})
	}
	return s
}

func deployQuestion(env string) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: "Deploy to " + env + "?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "description": "yes to deploy"},
		}},
	}
}

// deploy asks with a multi-round-trip input request.
func deploy(_ context.Context, req *mcp.CallToolRequest, in deployIn) (*mcp.CallToolResult, any, error) {
	resp, ok := req.Params.InputResponses["confirm"]
	if !ok {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": deployQuestion(in.Env)},
			RequestState:  "deploy:" + in.Env,
		}, nil, nil
	}
	er, _ := resp.(*mcp.ElicitResult)
	return deployed(in.Env, er), nil, nil
}

func deployed(env string, er *mcp.ElicitResult) *mcp.CallToolResult {
	switch {
	case er == nil:
		return text("no answer")
	case er.Action != "accept":
		reason, _ := er.Meta["io.harnessx/decline_reason"].(string)
		return text(fmt.Sprintf("not deployed: %s (%s)", er.Action, reason))
	case er.Content["approve"] != true:
		return text("not deployed: the user said no")
	}
	return text("deployed to " + env)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Lines returns n bytes of numbered lines ("line 0000001 ...\n"), the
// result of the tool "big".
func Lines(n int) string {
	var b strings.Builder
	b.Grow(n)
	for i := 1; b.Len() < n; i++ {
		line := fmt.Sprintf("line %07d of the big result, padded to make it longer than it needs to be\n", i)
		if b.Len()+len(line) > n {
			line = line[:n-b.Len()]
		}
		b.WriteString(line)
	}
	return b.String()
}
