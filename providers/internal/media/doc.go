// Package media holds what the providers share to send harness media
// parts: base64 text and data URLs built with one allocation, the
// Inliner that streams large parts' base64 into a request body instead of
// building it in memory, and the error for a part a model cannot take.
package media
