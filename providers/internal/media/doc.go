// Package media holds what the providers share to send harness media
// parts: base64 text and data URLs built with one allocation, and the
// error for a part a model cannot take.
package media
