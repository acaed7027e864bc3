// Command live is the quickstart on a real model: Anthropic when
// ANTHROPIC_API_KEY is set (model claude-haiku-5-5), else OpenAI when
// OPENAI_API_KEY is set (model gpt-5.4-mini); HARNESSX_MODEL picks another
// model. Without a key it runs the offline scripted model.
//
//	ANTHROPIC_API_KEY=sk-ant-… go run ./examples/quickstart
//
// examples/quickstart runs this program when a key is set; it is apart so
// that the offline quickstart never compiles the vendor SDKs.
package main
