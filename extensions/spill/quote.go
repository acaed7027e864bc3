package spill

import (
	"strconv"
	"strings"
)

// Replies quote what the model sent (ids, operation and column names,
// where values) and names found in stored data (columns). Any of these may
// be megabytes long, so they are quoted by a short prefix and their length,
// and lists of them are bounded: no reply, error or not, grows with them.

// quoteMax is the most bytes of one value that a reply quotes.
const quoteMax = 100

// quote returns s quoted as %q does when it is at most quoteMax bytes;
// a longer s is quoted by its first quoteMax bytes, cut on a UTF-8
// boundary, an ellipsis and its length: "aaaa…" (10485760 bytes).
func quote(s string) string { return quotePrefix(s, len(s)) }

// quotePrefix is quote for a value of n bytes of which s is the start,
// at least quoteMax+1 bytes of it (for the UTF-8 boundary) when n is
// larger than quoteMax.
func quotePrefix(s string, n int) string {
	if n <= quoteMax {
		return strconv.Quote(s)
	}
	q := strconv.Quote(cutUTF8(s, quoteMax))
	return q[:len(q)-1] + `…" (` + strconv.Itoa(n) + " bytes)"
}

// clip returns s when it is at most n bytes, and otherwise its first n
// bytes, cut on a UTF-8 boundary, an ellipsis and its length, unquoted:
// for numbers, and for text that is not a single value.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutUTF8(s, n) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// listMax bounds a list of names in a reply (the columns of a result).
const listMax = 2048

// nameList joins names with ", ", each cut to quoteMax bytes, stopping at
// max names or about listMax bytes with a count of the rest.
func nameList(names []string, max int) string {
	var b strings.Builder
	for i, n := range names {
		if i == max || b.Len() > listMax {
			b.WriteString(", … (" + strconv.Itoa(len(names)-i) + " more)")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(clip(n, quoteMax))
	}
	return b.String()
}

// capText returns s when it is at most max bytes, and otherwise s cut so
// that, with a note saying it was cut and what to do, it is max bytes at
// most. It is the last guard on a reply: the operations keep within the
// cap themselves.
func capText(s string, max int, what, todo string) string {
	if len(s) <= max {
		return s
	}
	note := "\n[" + what + " cut at " + strconv.Itoa(max) + " bytes of " + strconv.Itoa(len(s)) + "; " + todo + "]"
	return cutUTF8(s, max-len(note)) + note
}

// cappedError is an error whose text was cut to the output cap. It
// unwraps to the error it cuts, so errors.Is and errors.As still see it.
type cappedError struct {
	err error
	msg string
}

func (e *cappedError) Error() string { return e.msg }
func (e *cappedError) Unwrap() error { return e.err }

// capError returns err, or, when its text is longer than max bytes, an
// error with the text cut that wraps it.
func capError(err error, max int) error {
	msg := err.Error()
	if len(msg) <= max {
		return err
	}
	return &cappedError{err: err, msg: capText(msg, max, "error", "narrow the request")}
}
