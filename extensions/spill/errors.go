package spill

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with [errors.Is]; the typed errors below wrap
// them and carry the details.
var (
	// ErrInvalidID is returned for a result id that does not have the form
	// the extension generates ("res_" and 24 lowercase hex digits). Such an
	// id never reaches the file system.
	ErrInvalidID = errors.New("spill: invalid result id")
	// ErrUnknownID is returned for a well-formed id that names no stored result.
	ErrUnknownID = errors.New("spill: unknown result id")
	// ErrExists is returned by Store.Put for an id that is already stored.
	ErrExists = errors.New("spill: result id already stored")
	// ErrCorrupt is returned when a stored result no longer matches the
	// SHA-256 recorded when it was written ([CorruptError]).
	ErrCorrupt = errors.New("spill: stored result does not match its SHA-256")
	// ErrBadArgs is wrapped by every invalid read_result request ([ArgError]).
	ErrBadArgs = errors.New("spill: invalid read_result arguments")
	// ErrUnknownColumn is returned when a tabular operation names a column
	// that the result does not have.
	ErrUnknownColumn = errors.New("spill: unknown column")
	// ErrNotTabular is returned for a tabular operation on a result that is
	// not CSV, a JSON array or JSON lines.
	ErrNotTabular = errors.New("spill: result is not tabular")
	// ErrOutOfRange is returned for an offset past the end of a result.
	ErrOutOfRange = errors.New("spill: offset past the end")
	// ErrMalformed is wrapped by [FormatError]: a stored CSV or JSON result
	// that cannot be parsed where an operation needs it.
	ErrMalformed = errors.New("spill: malformed data")
	// ErrBadState is wrapped by every session state that cannot be loaded.
	ErrBadState = errors.New("spill: invalid session state")
	// ErrClosed is returned after the agent (and so the extension) closed.
	ErrClosed = errors.New("spill: extension is closed")
)

// ArgError reports an invalid read_result argument.
type ArgError struct {
	Field  string // the JSON field, or "" for the request as a whole
	Reason string
}

// Error describes the argument and what is wrong with it.
func (e *ArgError) Error() string {
	if e.Field == "" {
		return "invalid read_result arguments: " + e.Reason
	}
	return "invalid read_result argument " + quote(e.Field) + ": " + e.Reason
}

// Is reports ErrBadArgs.
func (e *ArgError) Is(target error) bool { return target == ErrBadArgs }

// CorruptError reports a stored result whose content changed after it was
// written.
type CorruptError struct {
	ID         string
	WantSHA256 string
	GotSHA256  string
	WantSize   int64
	GotSize    int64
}

// Error names the result and both hashes.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("stored result %s is corrupt: expected %d bytes with SHA-256 %s, found %d bytes with SHA-256 %s",
		e.ID, e.WantSize, e.WantSHA256, e.GotSize, e.GotSHA256)
}

// Is reports ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// FormatError reports stored data that cannot be parsed as its type.
type FormatError struct {
	ID   string
	Type Type
	// Row is the 0-based index of the data row (the CSV header is not a
	// row); -1 when unknown.
	Row int64
	// Line is the 1-based line of the file where the problem is; 0 when
	// unknown.
	Line int64
	Err  error
}

// Error names the result, the row and line, and the problem.
func (e *FormatError) Error() string {
	where := ""
	switch {
	case e.Line > 0 && e.Row >= 0:
		where = fmt.Sprintf(" at line %d (row %d)", e.Line, e.Row)
	case e.Line > 0:
		where = fmt.Sprintf(" at line %d", e.Line)
	case e.Row >= 0:
		where = fmt.Sprintf(" at row %d", e.Row)
	}
	return fmt.Sprintf("result %s: malformed %s%s: %v", e.ID, e.Type, where, e.Err)
}

// Unwrap returns the cause and ErrMalformed.
func (e *FormatError) Unwrap() []error { return []error{ErrMalformed, e.Err} }
