package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/harnessx/harnessx/extensions/mcp"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

// An MCP server's tools are offered once the model enables the server.
// The server runs in-process here, over the SDK's in-memory transport; a
// real one is mcp.Command("server-binary", args...) or
// mcp.StreamableHTTP(url).
func Example() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1.0"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "greet", Description: "Greet someone.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	inMemory := mcp.SDKTransport("memory", "", func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	})

	model := harnesstest.NewScriptedProvider(
		harnesstest.CallTool("1", "mcp_enable", map[string]string{"server": "greeter"}),
		harnesstest.CallTool("2", "greeter__greet", map[string]string{"name": "Ada"}),
		harnesstest.Reply("Done."),
	)
	dir, _ := os.MkdirTemp("", "mcp-example")
	defer os.RemoveAll(dir)
	agent, err := harness.New(
		harness.WithProvider(model),
		harness.WithStateDir(dir),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithExtensions(mcp.New(mcp.WithServer("greeter", inMemory))),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close(context.Background())

	res, err := agent.Run(context.Background(), "Greet Ada")
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, req := range model.Requests() {
		fmt.Printf("request %d offers %d tools\n", i+1, len(req.Tools))
	}
	for _, m := range res.Messages {
		for _, p := range m.Content {
			if p.ToolResult != nil && p.ToolResult.Name == "greeter__greet" {
				fmt.Println(p.ToolResult.Content)
			}
		}
	}
	// Output:
	// request 1 offers 1 tools
	// request 2 offers 2 tools
	// request 3 offers 2 tools
	// Hello, Ada!
}
