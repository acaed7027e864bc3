// Command mcptestserver runs the test server over stdio, with the crash
// and env tools, and "flood", which sends {"n": n} tools/list_changed
// notifications before it answers. The mcp extension's tests build and
// start it. With -extra FILE, its tools/list results end with the tools of
// FILE, a JSON array (testserver.Raw).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"

	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	extra := flag.String("extra", "", "a file with a JSON array of tools to add to tools/list results")
	flag.Parse()
	raw := &testserver.Raw{}
	if *extra != "" {
		b, err := os.ReadFile(*extra)
		if err != nil {
			log.Fatal(err)
		}
		if err := json.Unmarshal(b, &raw.Extra); err != nil {
			log.Fatal(err)
		}
	}
	srv := testserver.New(testserver.Options{Crash: true})
	mcp.AddTool(srv, &mcp.Tool{Name: "flood", Description: "Send n tools/list_changed notifications."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			N int `json:"n"`
		}) (*mcp.CallToolResult, any, error) {
			if err := raw.Flood(ctx, in.N); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil, nil
		})
	if err := srv.Run(context.Background(), raw.Wrap(&mcp.StdioTransport{})); err != nil {
		log.Fatal(err)
	}
}
