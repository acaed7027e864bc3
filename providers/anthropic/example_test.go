package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/anthropic"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

// A loopback server replays recorded API answers so that the example runs
// offline; against the real API, leave out WithBaseURL and WithHTTPClient
// and set ANTHROPIC_API_KEY.
func ExampleNew() {
	srv := replay.New(
		replay.File(filepath.Join("testdata", "replay", "tool_use.json")),
		replay.File(filepath.Join("testdata", "replay", "final.json")),
	)
	defer srv.Close()

	p, err := anthropic.New(
		anthropic.WithAPIKey("sk-ant-example"),
		anthropic.WithBaseURL(srv.URL()),
		anthropic.WithHTTPClient(srv.Client()),
		anthropic.WithPromptCaching(),
	)
	if err != nil {
		panic(err)
	}
	type in struct {
		City string `json:"city"`
	}
	weather := harness.MustTool(harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in in) (string, error) { return in.City + ": 18°C, light rain", nil }))

	agent, err := harness.New(
		harness.WithProvider(p),
		harness.WithModel("claude-sonnet-5-5"),
		harness.WithTools(weather),
	)
	if err != nil {
		panic(err)
	}
	defer agent.Close(context.Background())

	res, err := agent.Run(context.Background(), "What's the weather in Lisbon?")
	if err != nil {
		panic(err)
	}
	u := res.Usage
	fmt.Println(res.Text)
	fmt.Printf("steps %d, input %d (cache read %d), output %d\n", res.Steps, u.InputTokens, u.CacheReadInputTokens, u.OutputTokens)
	// Output:
	// Lisbon is at 18°C with light rain — take an umbrella.
	// steps 2, input 913 (cache read 466), output 77
}

// Authentication failures come back as a typed error that matches
// ErrAuthentication and is not retryable.
func ExampleAPIError() {
	srv := replay.New(replay.Status(401,
		`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, nil))
	defer srv.Close()

	p, _ := anthropic.New(anthropic.WithAPIKey("wrong"), anthropic.WithBaseURL(srv.URL()), anthropic.WithHTTPClient(srv.Client()))
	_, err := p.Generate(context.Background(), &harness.ModelRequest{
		Model:    "claude-sonnet-5-5",
		Messages: []harness.Message{harness.UserMessage("Hi")},
	})
	var apiErr *anthropic.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Type, apiErr.Message)
		fmt.Println(errors.Is(err, anthropic.ErrAuthentication), apiErr.Retryable())
	}
	// Output:
	// 401 authentication_error invalid x-api-key
	// true false
}
