// Command langsmith_tracing traces a parent agent and a child agent to
// LangSmith over OpenTelemetry, offline (a scripted model).
//
// The parent delegates to the child through harness.AgentTool; each agent
// has its own tracing extension, so the child's run nests under the
// parent's execute_tool span and LangSmith shows one tree: a chain for each
// agent, an llm run for each model request (with its invocation
// parameters: model, max_tokens, temperature, streaming; priced from
// ls_model_name, ls_provider and the usage with cache and reasoning
// tokens) and a tool run for each call.
//
//	LANGSMITH_API_KEY=lsv2_... LANGSMITH_PROJECT=harnessx go run ./examples/langsmith_tracing
//
// LANGSMITH_ENDPOINT (default https://api.smith.langchain.com) selects a
// region or a self-hosted LangSmith. Without LANGSMITH_API_KEY the spans
// go to the local OTLP JSON-lines file instead (HARNESSX_TRACES_FILE,
// default .harnessx/traces.jsonl), and the program says so.
package main
