package spill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// Operations of read_result.
const (
	opSlice     = "slice"
	opSearch    = "search"
	opColumns   = "columns"
	opRows      = "rows"
	opCount     = "count"
	opAggregate = "aggregate"
)

var ops = []string{opSlice, opSearch, opColumns, opRows, opCount, opAggregate}

// Limits of read_result arguments.
const (
	defaultSliceLines = 100
	defaultSliceBytes = 4096
	maxSliceLines     = 10_000
	defaultRows       = 20
	maxRows           = 1000
	defaultMatches    = 20
	maxMatches        = 1000
	maxContext        = 10
	maxPattern        = 1000
	maxConditions     = 20
	maxColumnsArg     = 100
)

// args is a decoded read_result request. parseArgs fills in defaults, so
// that encoding it and parsing again gives the same value.
type args struct {
	ID         string      `json:"id"`
	Op         string      `json:"op"`
	Unit       string      `json:"unit,omitempty"`
	Offset     int64       `json:"offset,omitempty"`
	Limit      int64       `json:"limit,omitempty"`
	Pattern    string      `json:"pattern,omitempty"`
	IgnoreCase bool        `json:"ignore_case,omitempty"`
	Context    int         `json:"context,omitempty"`
	MaxMatches int         `json:"max_matches,omitempty"`
	Where      []condition `json:"where,omitempty"`
	Columns    []string    `json:"columns,omitempty"`
	Column     string      `json:"column,omitempty"`
	Func       string      `json:"func,omitempty"`
}

// condition is one filter of a tabular operation; conditions are ANDed.
type condition struct {
	Column string          `json:"column"`
	Op     string          `json:"op"`
	Value  json.RawMessage `json:"value"`
}

var condOps = []string{"eq", "ne", "contains", "gt", "gte", "lt", "lte"}
var aggFuncs = []string{"sum", "min", "max", "mean"}

// fieldsOf lists the optional fields each operation accepts.
var fieldsOf = map[string][]string{
	opSlice:     {"unit", "offset", "limit"},
	opSearch:    {"pattern", "ignore_case", "context", "max_matches", "offset"},
	opColumns:   {},
	opRows:      {"where", "columns", "offset", "limit"},
	opCount:     {"where"},
	opAggregate: {"where", "column", "func"},
}

// parseArgs decodes and checks read_result arguments strictly: unknown
// fields, fields that do not apply to the operation, bad values and
// invalid regular expressions are *ArgError values naming the field. Bad
// values are quoted by a prefix (quote), and the request is decoded with
// json.Unmarshal, which copies each value once, instead of a json.Decoder,
// whose buffer grows to several times the size of a huge request.
func parseArgs(data []byte) (*args, error) {
	// Unknown fields are looked for first: json.Unmarshal would fold the
	// case of an unknown key to match it, in several copies of its size.
	if json.Valid(data) {
		if key, where, ok := unknownField(data); ok {
			in := "read_result takes " + strings.Join(argFields, ", ")
			if where {
				in = "a where condition takes " + strings.Join(condFields, ", ")
			}
			return nil, &ArgError{Reason: fmt.Sprintf("unknown field %s; %s", quoteKey(key), in)}
		}
	}
	var a args
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &ArgError{Reason: "not a valid JSON object of read_result arguments: " + jsonError(err)}
	}
	if a.ID == "" {
		return nil, &ArgError{Field: "id", Reason: "required: the id from the envelope, like res_0123456789abcdef01234567"}
	}
	if !ValidID(a.ID) {
		return nil, &ArgError{Field: "id", Reason: fmt.Sprintf("%s is not a result id (ids look like res_0123456789abcdef01234567)", quote(a.ID))}
	}
	if !slices.Contains(ops, a.Op) {
		return nil, &ArgError{Field: "op", Reason: fmt.Sprintf("%s is not an operation; use one of %v", quote(a.Op), ops)}
	}
	// An empty list is no list (so that a request round-trips).
	if len(a.Where) == 0 {
		a.Where = nil
	}
	if len(a.Columns) == 0 {
		a.Columns = nil
	}
	// Fields given for another operation are mistakes worth reporting.
	set := map[string]bool{
		"unit": a.Unit != "", "offset": a.Offset != 0, "limit": a.Limit != 0, "pattern": a.Pattern != "",
		"ignore_case": a.IgnoreCase, "context": a.Context != 0, "max_matches": a.MaxMatches != 0,
		"where": a.Where != nil, "columns": a.Columns != nil, "column": a.Column != "", "func": a.Func != "",
	}
	for _, f := range []string{"unit", "offset", "limit", "pattern", "ignore_case", "context", "max_matches", "where", "columns", "column", "func"} {
		if set[f] && !slices.Contains(fieldsOf[a.Op], f) {
			return nil, &ArgError{Field: f, Reason: fmt.Sprintf("does not apply to op %q (it takes %v)", a.Op, fieldsOf[a.Op])}
		}
	}
	if a.Offset < 0 {
		return nil, &ArgError{Field: "offset", Reason: "must not be negative"}
	}
	if a.Limit < 0 {
		return nil, &ArgError{Field: "limit", Reason: "must not be negative"}
	}
	switch a.Op {
	case opSlice:
		switch a.Unit {
		case "":
			a.Unit = "lines"
		case "lines", "bytes":
		default:
			return nil, &ArgError{Field: "unit", Reason: fmt.Sprintf("%s: use \"lines\" or \"bytes\"", quote(a.Unit))}
		}
		if a.Limit == 0 {
			a.Limit = defaultSliceLines
			if a.Unit == "bytes" {
				a.Limit = defaultSliceBytes
			}
		}
		if a.Unit == "lines" && a.Limit > maxSliceLines {
			return nil, &ArgError{Field: "limit", Reason: fmt.Sprintf("at most %d lines", maxSliceLines)}
		}
	case opSearch:
		if a.Pattern == "" {
			return nil, &ArgError{Field: "pattern", Reason: "required: a regular expression (RE2 syntax)"}
		}
		if len(a.Pattern) > maxPattern {
			return nil, &ArgError{Field: "pattern", Reason: fmt.Sprintf("longer than %d bytes", maxPattern)}
		}
		if _, err := compilePattern(a.Pattern, a.IgnoreCase); err != nil {
			return nil, &ArgError{Field: "pattern", Reason: "invalid regular expression: " + regexpError(err)}
		}
		if a.Context < 0 || a.Context > maxContext {
			return nil, &ArgError{Field: "context", Reason: fmt.Sprintf("must be 0 to %d lines", maxContext)}
		}
		if a.MaxMatches == 0 {
			a.MaxMatches = defaultMatches
		}
		if a.MaxMatches < 0 || a.MaxMatches > maxMatches {
			return nil, &ArgError{Field: "max_matches", Reason: fmt.Sprintf("must be 1 to %d", maxMatches)}
		}
	case opRows:
		if a.Limit == 0 {
			a.Limit = defaultRows
		}
		if a.Limit > maxRows {
			return nil, &ArgError{Field: "limit", Reason: fmt.Sprintf("at most %d rows", maxRows)}
		}
		if len(a.Columns) > maxColumnsArg {
			return nil, &ArgError{Field: "columns", Reason: fmt.Sprintf("at most %d columns", maxColumnsArg)}
		}
		for _, c := range a.Columns {
			if c == "" {
				return nil, &ArgError{Field: "columns", Reason: "empty column name"}
			}
		}
	case opAggregate:
		if a.Column == "" {
			return nil, &ArgError{Field: "column", Reason: "required: the numeric column to aggregate"}
		}
		if a.Func != "" && !slices.Contains(aggFuncs, a.Func) {
			return nil, &ArgError{Field: "func", Reason: fmt.Sprintf("%s: use one of %v, or omit it for all", quote(a.Func), aggFuncs)}
		}
	}
	if len(a.Where) > maxConditions {
		return nil, &ArgError{Field: "where", Reason: fmt.Sprintf("at most %d conditions", maxConditions)}
	}
	for i := range a.Where {
		c := &a.Where[i]
		field := fmt.Sprintf("where[%d]", i)
		if c.Column == "" {
			return nil, &ArgError{Field: field, Reason: "column is required"}
		}
		if !slices.Contains(condOps, c.Op) {
			return nil, &ArgError{Field: field, Reason: fmt.Sprintf("op %s: use one of %v", quote(c.Op), condOps)}
		}
		v := bytes.TrimSpace(c.Value)
		if len(v) == 0 {
			return nil, &ArgError{Field: field, Reason: "value is required (a string, number, boolean or null)"}
		}
		if v[0] == '{' || v[0] == '[' {
			return nil, &ArgError{Field: field, Reason: "value must be a string, number, boolean or null"}
		}
		// A scalar has no insignificant space inside it, so v is already
		// compact: it is kept as it is, not copied.
		if !json.Valid(v) {
			return nil, &ArgError{Field: field, Reason: "value is not valid JSON"}
		}
		c.Value = v
	}
	return &a, nil
}

// argFields and condFields are the JSON names of the fields of args and
// condition.
var (
	argFields  = jsonNames(reflect.TypeFor[args]())
	condFields = jsonNames(reflect.TypeFor[condition]())
)

func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// unknownField returns the first key of the request data (valid JSON)
// that names no field of args, or of a where condition, as written (quoted),
// and whether it was in a condition. Keys match fields as encoding/json
// matches them: exactly or ignoring case (bytes.EqualFold). It is what
// json.Decoder.DisallowUnknownFields checks, without the decoder's buffer.
func unknownField(data []byte) (key []byte, inWhere, found bool) {
	objectFields(data, func(k, v []byte) bool {
		name, ok := knownKey(k, argFields)
		if !ok {
			key, found = k, true
			return false
		}
		if name != "where" {
			return true
		}
		arrayElems(v, func(elem []byte) bool {
			objectFields(elem, func(k, _ []byte) bool {
				if _, ok := knownKey(k, condFields); !ok {
					key, inWhere, found = k, true, true
				}
				return !found
			})
			return !found
		})
		return !found
	})
	return key, inWhere, found
}

// knownKey returns the name among names that the quoted JSON key k
// matches.
func knownKey(k []byte, names []string) (string, bool) {
	raw := k[1 : len(k)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		if json.Unmarshal(k, &s) != nil {
			return "", false
		}
		raw = []byte(s)
	}
	for _, n := range names {
		if bytes.EqualFold(raw, []byte(n)) {
			return n, true
		}
	}
	return "", false
}

// quoteKey quotes the JSON key k (quoted, as written) as quote does,
// copying only the prefix it quotes unless k has escapes.
func quoteKey(k []byte) string {
	raw := k[1 : len(k)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return quotePrefix(string(raw[:min(len(raw), quoteMax+1)]), len(raw))
	}
	var s string
	if json.Unmarshal(k, &s) != nil {
		return quotePrefix(string(k[:min(len(k), quoteMax+1)]), len(k))
	}
	return quote(s)
}

// objectFields calls fn with each key (quoted, as written) and value of
// the JSON object b, which must be valid JSON, until fn returns false. A
// value that is not an object has no fields.
func objectFields(b []byte, fn func(k, v []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return
		}
		ks := i
		i = skipString(b, i)
		k := b[ks:i]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipSpace(b, i+1)
		vs := i
		i = skipValue(b, i)
		if !fn(k, b[vs:i]) {
			return
		}
	}
}

// arrayElems calls fn with each element of the JSON array b, which must
// be valid JSON, until fn returns false. A value that is not an array has
// no elements.
func arrayElems(b []byte, fn func(v []byte) bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] == ']' {
			return
		}
		vs := i
		i = skipValue(b, i)
		if i == vs || !fn(b[vs:i]) {
			return
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the end of the valid JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && !strings.ContainsRune(",]} \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// jsonError returns the text of a json.Unmarshal error with the value it
// quotes (a number of any length, say) cut.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		short := *te
		short.Value = clip(te.Value, quoteMax)
		short.Field = clip(te.Field, quoteMax)
		return short.Error()
	}
	return clip(err.Error(), 2*quoteMax)
}

// regexpError returns the text of a regexp.Compile error with the part of
// the pattern it quotes cut.
func regexpError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) && len(se.Expr) > quoteMax {
		short := *se
		short.Expr = cutUTF8(se.Expr, quoteMax) + "…"
		return short.Error()
	}
	return clip(err.Error(), 2*quoteMax)
}

// compilePattern compiles a search pattern in multi-line mode, so that ^
// and $ match at line boundaries.
func compilePattern(p string, ignoreCase bool) (*regexp.Regexp, error) {
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(flags + p)
}

// inputSchema is the JSON schema of read_result's arguments.
const inputSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "The result id from the envelope, like res_0123456789abcdef01234567."},
    "op": {"type": "string", "enum": ["slice", "search", "columns", "rows", "count", "aggregate"],
      "description": "slice: part of the result by lines or bytes. search: lines matching a regular expression, with context. columns: the columns of CSV, a JSON array or JSON lines. rows: rows from an offset, optionally filtered and projected. count: number of rows matching the filters. aggregate: sum, min, max and mean of a numeric column over the matching rows."},
    "unit": {"type": "string", "enum": ["lines", "bytes"], "description": "slice: count lines (default) or bytes."},
    "offset": {"type": "integer", "minimum": 0, "description": "slice: lines or bytes to skip (0 starts at the beginning). search: lines to skip before searching. rows: matching rows to skip."},
    "limit": {"type": "integer", "minimum": 0, "description": "slice: lines (default 100) or bytes (default 4096) to return. rows: rows to return (default 20, at most 1000)."},
    "pattern": {"type": "string", "description": "search: a regular expression in RE2 syntax, matched against each line."},
    "ignore_case": {"type": "boolean", "description": "search: match case-insensitively."},
    "context": {"type": "integer", "minimum": 0, "maximum": 10, "description": "search: lines of context before and after each match."},
    "max_matches": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "search: stop after this many matches (default 20)."},
    "where": {"type": "array", "description": "rows, count, aggregate: filters, all of which must hold.",
      "items": {"type": "object", "properties": {
        "column": {"type": "string"},
        "op": {"type": "string", "enum": ["eq", "ne", "contains", "gt", "gte", "lt", "lte"], "description": "eq/ne compare numbers numerically and anything else as text; contains is a case-sensitive substring test; gt/gte/lt/lte compare numbers numerically, and text lexically."},
        "value": {"description": "A string, number, boolean or null."}
      }, "required": ["column", "op", "value"], "additionalProperties": false}},
    "columns": {"type": "array", "items": {"type": "string"}, "description": "rows: the columns to show (default all)."},
    "column": {"type": "string", "description": "aggregate: the numeric column."},
    "func": {"type": "string", "enum": ["sum", "min", "max", "mean"], "description": "aggregate: one function; omit for all."}
  },
  "required": ["id", "op"],
  "additionalProperties": false
}`

const toolDescription = "Read a tool result that was too large to show and was stored instead (see its envelope for the id). " +
	"Slice it by lines or bytes, search it with a regular expression, or query CSV, JSON-array and JSON-lines results as tables: " +
	"list columns, read rows, count and aggregate with filters. Output is capped; narrow the request when it says so."
