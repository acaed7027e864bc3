// Command quickstart runs a small agent: the model asks a weather tool,
// reads its answer and replies. It prints the transcript and the token
// usage, cache-read, cache-creation and reasoning tokens included.
//
//	go run ./examples/quickstart
//
// It runs offline on a scripted model by default. With ANTHROPIC_API_KEY
// set it uses Anthropic (model claude-haiku-5-5), with OPENAI_API_KEY set
// OpenAI (model gpt-5.4-mini); HARNESSX_MODEL picks another model.
package main
