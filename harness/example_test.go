package harness_test

import (
	"context"
	"fmt"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func Example() {
	type addInput struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := harness.MustTool(harness.NewTool("add", "Add two numbers.", func(_ context.Context, in addInput) (int, error) {
		return in.A + in.B, nil
	}))
	model := ht.NewScriptedProvider(
		ht.CallTool("call_1", "add", `{"a":2,"b":3}`),
		ht.Response{Text: "2 + 3 = 5", Usage: harness.Usage{InputTokens: 40, OutputTokens: 8}},
	)
	agent, err := harness.New(harness.WithProvider(model), harness.WithModel("demo"), harness.WithTools(add))
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	res, err := agent.Run(context.Background(), "What is 2 + 3?")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Steps, res.Text)
	fmt.Println("tool said:", res.Messages[2].Content[0].ToolResult.Content)
	// Output:
	// completed 2 2 + 3 = 5
	// tool said: 5
}

// searchExtension packages a tool, a middleware and a prompt provider.
type searchExtension struct{ collection string }

func (e *searchExtension) Name() string  { return "search_feature" }
func (e *searchExtension) Priority() int { return 50 }

func (e *searchExtension) Install(ec *harness.ExtensionContext) error {
	type in struct {
		Query string `json:"query"`
	}
	tool := harness.MustTool(harness.NewTool("search", "Search the collection.", func(_ context.Context, q in) (string, error) {
		return e.collection + ": " + q.Query, nil
	}))
	tool.ReplayPolicy = harness.ReplaySafe
	if _, err := ec.RegisterTool(tool); err != nil {
		return err
	}
	_, err := ec.RegisterPromptProvider(func() string { return "The search tool searches " + e.collection + "." })
	return err
}

func ExampleExtension() {
	model := ht.NewScriptedProvider(ht.CallTool("c1", "search", `{"query":"install"}`), ht.Reply("Found it."))
	agent, err := harness.New(harness.WithProvider(model), harness.WithExtensions(&searchExtension{collection: "product_docs"}))
	if err != nil {
		panic(err)
	}
	res, _ := agent.Run(context.Background(), "How do I install?")
	fmt.Println(res.Messages[2].Content[0].ToolResult.Content)
	fmt.Println(model.Requests()[0].System)
	agent.Close(context.Background())
	fmt.Println(agent.Inventory().Tools)
	// Output:
	// product_docs: install
	// The search tool searches product_docs.
	// []
}

func ExampleAgent_Resume() {
	deploy := harness.MustTool(harness.NewTool("deploy", "Deploy.", func(context.Context, struct{}) (string, error) {
		return "deployed", nil
	}))
	deploy.Permission = harness.PermissionAsk
	model := ht.NewScriptedProvider(ht.CallTool("d1", "deploy", `{}`), ht.Reply("Done."))
	agent, _ := harness.New(harness.WithProvider(model), harness.WithTools(deploy))
	defer agent.Close(context.Background())

	res, _ := agent.Run(context.Background(), "Ship it")
	fmt.Println(res.Status, res.Pending[0].ToolCall.Name)
	res, _ = agent.Resume(context.Background(), harness.Approve(res.Pending[0].ID))
	fmt.Println(res.Status, res.Text)
	// Output:
	// paused deploy
	// completed Done.
}

// ExampleAgent_RunMessage starts a run from a user message with an image,
// and a tool returns a second image beside its text (a ToolOutput).
func ExampleAgent_RunMessage() {
	photo := []byte("\x89PNG\r\n\x1a\n…the user's photo")
	crop := harness.MustTool(harness.NewTool("crop", "Crop the photo.", func(context.Context, struct{}) (harness.ToolOutput, error) {
		return harness.ToolOutput{Text: "cropped", Parts: []harness.Part{harness.ImagePart([]byte("\x89PNG…the crop"), "image/png")}}, nil
	}))
	model := ht.NewScriptedProvider(ht.CallTool("c1", "crop", `{}`), ht.Reply("A cat."))
	agent, _ := harness.New(harness.WithProvider(model), harness.WithTools(crop))
	defer agent.Close(context.Background())

	res, err := agent.RunMessage(context.Background(), harness.UserParts(
		harness.Text("What is in this photo?"),
		harness.ImagePart(photo, "image/png"),
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range res.Messages {
		for _, p := range m.Content {
			switch {
			case p.IsMedia():
				fmt.Println(m.Role, p.Type, p.MIME())
			case p.ToolResult != nil:
				fmt.Println(m.Role, p.ToolResult.Content, "+", len(p.ToolResult.Parts), "part:", p.ToolResult.Parts[0].Type)
			case p.Type == harness.PartText:
				fmt.Println(m.Role, p.Text)
			}
		}
	}
	// Output:
	// user What is in this photo?
	// user image image/png
	// tool cropped + 1 part: image
	// assistant A cat.
}

// ExampleExecutionKey runs a turn under a run ID chosen by the caller (a
// durable runtime's workflow ID) and shows the execution key a tool can
// send to an external API as an idempotency key.
func ExampleExecutionKey() {
	charge := harness.MustTool(harness.NewTool("charge", "Charge the card.", func(ctx context.Context, _ struct{}) (string, error) {
		return "charged with idempotency key " + harness.ExecutionKey(ctx), nil
	}))
	model := ht.NewScriptedProvider(ht.CallTool("call_1", "charge", `{}`), ht.Reply("done"))
	agent, err := harness.New(harness.WithProvider(model), harness.WithTools(charge))
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	res, err := agent.Run(harness.ContextWithRunID(context.Background(), "order-42"), "Charge the order.")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.RunID)
	fmt.Println(res.Messages[2].Content[0].ToolResult.Content)
	// Output:
	// order-42
	// charged with idempotency key order-42/tool/1/call_1
}

// An interactive application answers the questions its tools ask with
// harness.AskUser; here the "user" always picks the first option.
func ExampleWithAsker() {
	type deployInput struct {
		Service string `json:"service"`
	}
	deploy := harness.MustTool(harness.NewTool("deploy", "Deploy a service.", func(ctx context.Context, in deployInput) (string, error) {
		ans, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskSelect, Prompt: "Deploy " + in.Service + " where?",
			Options: []string{"staging", "production"}})
		if err != nil {
			return "", err
		}
		return in.Service + " deployed to " + ans.Choice, nil
	}))
	ask := func(ctx context.Context, req harness.AskRequest) (harness.Answer, error) {
		fmt.Println("asked:", req.Prompt, req.Options)
		return harness.Answer{Choice: req.Options[0]}, nil
	}
	model := ht.NewScriptedProvider(ht.CallTool("c1", "deploy", `{"service":"api"}`), ht.Reply("Done."))
	agent, err := harness.New(harness.WithProvider(model), harness.WithStateDir(""), harness.WithTools(deploy), harness.WithAsker(ask))
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	res, _ := agent.Run(context.Background(), "deploy the api")
	fmt.Println(res.Messages[2].Content[0].ToolResult.Content)
	// Output:
	// asked: Deploy api where? [staging production]
	// api deployed to staging
}

// An extension (here a tool) asks the agent's model for a completion on the
// side: the request gets the agent's model and passes its interceptors and
// middleware, and the conversation does not change.
func ExampleAgent_Generate() {
	model := ht.NewScriptedProvider(ht.Reply("A fox jumps."))
	agent, err := harness.New(harness.WithProvider(model), harness.WithModel("demo"))
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	resp, err := agent.Generate(context.Background(), &harness.ModelRequest{
		System:    "Summarize in three words.",
		Messages:  []harness.Message{harness.UserMessage("The quick brown fox jumps over the lazy dog.")},
		MaxTokens: 20,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text(), model.Requests()[0].Model, len(agent.Messages()))
	// Output:
	// A fox jumps. demo 0
}
