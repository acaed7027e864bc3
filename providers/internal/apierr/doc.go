// Package apierr holds the error values shared by the harnessx model
// providers, so that providers/anthropic and providers/openai report failures
// with the same types and sentinels. Each provider package re-exports them.
package apierr
