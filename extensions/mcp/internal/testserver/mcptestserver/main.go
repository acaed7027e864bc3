// Command mcptestserver runs the test server over stdio, with the crash
// tool. The mcp extension's tests build and start it.
package main

import (
	"context"
	"log"

	"github.com/harnessx/harnessx/extensions/mcp/internal/testserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := testserver.New(testserver.Options{Crash: true}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
