package mcp

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/harnessx/harnessx/internal/redact"
)

// Bounds on what a server sends, which is untrusted: a name, a
// description or a schema is a few kilobytes at most in practice, and must
// not flood the model's context or the log when it is not.
const (
	// maxToolName is the longest tool name the adapter accepts: the
	// specification allows 1 to 128 characters.
	maxToolName = 128
	// maxDescription bounds a tool's description and the server's
	// instructions; longer ones are cut, with a marker.
	maxDescription = 8 << 10
	// maxSchemaDepth bounds the nesting of a tool's input schema.
	maxSchemaDepth = 64
	// maxShownName is how much of a refused name errors and logs show.
	maxShownName = 48
	// maxLogData bounds the data of a server's log message in the log and
	// the events.
	maxLogData = 4 << 10
	// stderrInError is how much of a stdio server's standard error an
	// error shows (the log shows all that was kept).
	stderrInError = 4 << 10
)

// redacted returns s with what looks like a secret replaced by a marker
// (the built-in rules of the flight recorder and the tracing extension).
func redacted(s string) string { return redact.Builtin().String(s) }

// clip returns s cut to at most n bytes of valid UTF-8, saying how long it
// was when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("… [%d bytes in all]", len(s))
}

// shownName is a name from a server as errors and logs show it: quoted,
// and cut when long.
func shownName(s string) string {
	if len(s) <= maxShownName {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", strings.ToValidUTF8(s[:maxShownName], ""), len(s))
}

// shortName is a name from a server as listings show it: as it is, or
// quoted and cut when long.
func shortName(s string) string {
	if len(s) <= maxShownName {
		return s
	}
	return shownName(s)
}

// redactedError is an error whose message was redacted: it unwraps to the
// original error, whose own message may hold a secret.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with a redacted message. An error that is
// already a redactedError (such as one whose URL credentials
// Transport.redactErr removed) gets the rules applied to its message, and
// still unwraps to the original.
func redactError(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*redactedError); ok {
		if msg := redacted(re.msg); msg != re.msg {
			return &redactedError{msg: msg, err: re.err}
		}
		return err
	}
	return &redactedError{msg: redacted(err.Error()), err: err}
}

// logLimiter lets at most logBurst messages of a kind through per
// logWindow; the first message of the next window says how many were
// suppressed. It is safe for concurrent use.
type logLimiter struct {
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

const (
	logBurst  = 5
	logWindow = 10 * time.Second
)

// allow reports whether a message may be logged now, and how many were
// suppressed before it.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= logWindow {
		l.start, l.n = now, 0
	}
	if l.n >= logBurst {
		l.suppressed++
		return false, 0
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return true, s
}

// jsonDepth returns how deep the arrays and objects of the JSON text raw
// nest, counting up to max+1.
func jsonDepth(raw []byte, max int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > max {
					return deepest
				}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
