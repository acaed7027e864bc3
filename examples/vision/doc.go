// Command vision shows an agent that sees images, offline: it draws a PNG
// in code, sends it in the user message next to the question, the
// scripted model asks a zoom tool for a closer look, the tool returns a
// second PNG as a part of its result, and the model answers from both.
//
//	go run ./examples/vision
//
// It prints the transcript, with each image as its MIME type, size and
// SHA-256 (the hash that the prompt-cache prefix key covers it by), the
// proof that every model request held the very bytes of the images (no
// copy per step), and where the spans went. Spans go where the
// environment says (exporters.FromEnv): HARNESSX_TRACES_FILE names the
// OTLP JSON file, by default .harnessx/traces.jsonl.
package main
