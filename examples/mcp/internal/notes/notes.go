// Package notes is the MCP server of the mcp example: a small notebook
// with a read-only search, an add and a destructive delete, served over
// stdio by the example's own binary (examples/mcp -serve).
package notes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type book struct {
	mu    sync.Mutex
	notes map[string]string
}

type searchIn struct {
	Query string `json:"query" jsonschema:"words to look for in titles and texts"`
}

type addIn struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

type titleIn struct {
	Title string `json:"title"`
}

// New returns the server, with a few notes.
func New() *mcp.Server {
	b := &book{notes: map[string]string{
		"deploy checklist": "Run the migrations, deploy the API, then the workers.",
		"deploy freeze":    "No deploys on Fridays after 15:00.",
		"oncall":           "Page the platform team for database incidents.",
	}}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0"}, &mcp.ServerOptions{
		Instructions: "Search the team's notes before answering questions about procedures.",
	})
	mcp.AddTool(s, &mcp.Tool{Name: "search_notes", Description: "Find the notes whose title or text contains the query.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, b.search)
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Add or replace a note.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)}}, b.add)
	mcp.AddTool(s, &mcp.Tool{Name: "delete_note", Description: "Delete a note.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)}}, b.delete)
	return s
}

func (b *book) search(_ context.Context, req *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := strings.ToLower(in.Query)
	var titles []string
	for t, text := range b.notes {
		if strings.Contains(strings.ToLower(t+" "+text), q) {
			titles = append(titles, t)
		}
	}
	slices.Sort(titles)
	var out strings.Builder
	fmt.Fprintf(&out, "%d notes match %q", len(titles), in.Query)
	for _, t := range titles {
		fmt.Fprintf(&out, "\n- %s: %s", t, b.notes[t])
	}
	// The client's trace context, which a traced server would continue.
	if tp, ok := req.Params.Meta["traceparent"].(string); ok {
		fmt.Fprintf(&out, "\n(server saw traceparent %s)", tp)
	}
	return text(out.String()), nil, nil
}

func (b *book) add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notes[in.Title] = in.Text
	return text("saved " + in.Title), nil, nil
}

func (b *book) delete(_ context.Context, _ *mcp.CallToolRequest, in titleIn) (*mcp.CallToolResult, any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.notes[in.Title]; !ok {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no note " + in.Title}}}, nil, nil
	}
	delete(b.notes, in.Title)
	return text("deleted " + in.Title), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
