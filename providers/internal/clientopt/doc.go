// Package clientopt holds the client settings that the harnessx model
// providers take the same way (API key, base URL, retries, HTTP client, raw
// SDK request options, logger) and turns them into an SDK's request
// options. It is generic over the SDK's request option type, so that
// providers/anthropic and providers/openai share the plumbing while each
// keeps its own exported Option functions and documentation.
package clientopt
