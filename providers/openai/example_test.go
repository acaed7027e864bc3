package openai_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
	"github.com/harnessx/harnessx/providers/openai"
)

// A loopback server replays recorded API answers so that the example runs
// offline; against the real API, leave out WithBaseURL and WithHTTPClient
// and set OPENAI_API_KEY.
func ExampleNew() {
	srv := replay.New(
		replay.File(filepath.Join("testdata", "replay", "tool_use.json")),
		replay.File(filepath.Join("testdata", "replay", "final.json")),
	)
	defer srv.Close()

	p, err := openai.New(
		openai.WithAPIKey("sk-example"),
		openai.WithBaseURL(srv.URL()),
		openai.WithHTTPClient(srv.Client()),
		openai.WithPromptCacheKey(),
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
		harness.WithModel("gpt-5.4-mini"),
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
	fmt.Printf("steps %d, input %d (cached %d), output %d\n", res.Steps, u.InputTokens, u.CacheReadInputTokens, u.OutputTokens)
	// Output:
	// Lisbon is at 18°C with light rain — take an umbrella.
	// steps 2, input 913 (cached 384), output 77
}

// Authentication failures come back as a typed error that matches
// ErrAuthentication and is not retryable.
func ExampleAPIError() {
	srv := replay.New(replay.Status(401,
		`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, nil))
	defer srv.Close()

	p, _ := openai.New(openai.WithAPIKey("wrong"), openai.WithBaseURL(srv.URL()), openai.WithHTTPClient(srv.Client()))
	_, err := p.Generate(context.Background(), &harness.ModelRequest{
		Model:    "gpt-5.4-mini",
		Messages: []harness.Message{harness.UserMessage("Hi")},
	})
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.Message)
		fmt.Println(errors.Is(err, openai.ErrAuthentication), apiErr.Retryable())
	}
	// Output:
	// 401 invalid_api_key Incorrect API key provided.
	// true false
}
