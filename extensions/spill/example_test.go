package spill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/harness"
)

// ordersCSV is a CSV export of n orders.
func ordersCSV(n int) string {
	var b strings.Builder
	b.WriteString("order_id,country,amount\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%s,%d.50\n", 1000+i, []string{"PT", "JP", "FR", "DE"}[i%4], 10+i%90)
	}
	return b.String()
}

var resultID = regexp.MustCompile(`res_[0-9a-f]{24}`)

// A model (here a small function) calls a tool whose result is too large,
// receives the envelope, and queries the stored result with read_result.
func ExampleNew() {
	ctx := context.Background()
	export := harness.MustTool(harness.NewTool("export_orders", "Export all orders as CSV.",
		func(context.Context, struct{}) (string, error) { return ordersCSV(20_000), nil }))

	step := 0
	model := harness.ProviderFunc(func(_ context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
		step++
		last := req.Messages[len(req.Messages)-1]
		var call *harness.ToolCall
		switch step {
		case 1:
			call = &harness.ToolCall{ID: "c1", Name: "export_orders", Input: json.RawMessage(`{}`)}
		case 2:
			envelope := last.Content[0].ToolResult.Content
			fmt.Println(strings.SplitN(envelope, "\n", 2)[0])
			in, _ := json.Marshal(map[string]any{"id": resultID.FindString(envelope), "op": "aggregate", "column": "amount",
				"where": []any{map[string]any{"column": "country", "op": "eq", "value": "JP"}}})
			call = &harness.ToolCall{ID: "c2", Name: spill.ToolName, Input: in}
		default:
			fmt.Println(resultID.ReplaceAllString(last.Content[0].ToolResult.Content, "res_…"))
			return &harness.ModelResponse{Message: harness.AssistantMessage("Done.")}, nil
		}
		return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant,
			Content: []harness.Part{{Type: harness.PartToolCall, ToolCall: call}}}}, nil
	})

	agent, err := harness.New(harness.WithProvider(model), harness.WithTools(export),
		harness.WithExtensions(spill.New(spill.WithThreshold(32_000))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close(ctx) // removes the temporary store
	if _, err := agent.Run(ctx, "What is the total of the Japanese orders?"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [result spilled: export_orders returned 291,024 bytes in 20,001 lines, too large to show in full]
	// aggregate of "amount" over 5000 of 20000 rows where country eq "JP" (result res_…): 5000 numeric values
	// sum = 277320
	// min = 11.5
	// max = 99.5
	// mean = 55.464
}

// A tool that produces a large output as a stream can spill it directly
// and return the envelope.
func ExampleExtension_Spill() {
	ctx := context.Background()
	ext := spill.New()
	defer ext.Teardown(ctx)
	r, err := ext.Spill(ctx, "logs", strings.NewReader(strings.Repeat("GET /health 200\n", 5000)+"GET /pay 500\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Type, r.Size, r.Lines)
	out, err := ext.Read(ctx, json.RawMessage(`{"id":"`+r.ID+`","op":"search","pattern":" 5\\d\\d$","context":1}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resultID.ReplaceAllString(out, "res_…"))
	// Output:
	// text 80013 5001
	// search / 5\d\d$/ in res_… (5,001 lines): 1 matching lines
	// 5000- GET /health 200
	// 5001: GET /pay 500
}
