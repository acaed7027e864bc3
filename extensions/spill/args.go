package spill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
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
// invalid regular expressions are *ArgError values naming the field.
func parseArgs(data []byte) (*args, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a args
	if err := dec.Decode(&a); err != nil {
		return nil, &ArgError{Reason: fmt.Sprintf("not a valid JSON object of read_result arguments: %v", err)}
	}
	if dec.More() {
		return nil, &ArgError{Reason: "trailing data after the arguments"}
	}
	if a.ID == "" {
		return nil, &ArgError{Field: "id", Reason: "required: the id from the envelope, like res_0123456789abcdef01234567"}
	}
	if !ValidID(a.ID) {
		return nil, &ArgError{Field: "id", Reason: fmt.Sprintf("%q is not a result id (ids look like res_0123456789abcdef01234567)", a.ID)}
	}
	if !slices.Contains(ops, a.Op) {
		return nil, &ArgError{Field: "op", Reason: fmt.Sprintf("%q is not an operation; use one of %v", a.Op, ops)}
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
			return nil, &ArgError{Field: "unit", Reason: fmt.Sprintf("%q: use \"lines\" or \"bytes\"", a.Unit)}
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
			return nil, &ArgError{Field: "pattern", Reason: fmt.Sprintf("invalid regular expression: %v", err)}
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
			return nil, &ArgError{Field: "func", Reason: fmt.Sprintf("%q: use one of %v, or omit it for all", a.Func, aggFuncs)}
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
			return nil, &ArgError{Field: field, Reason: fmt.Sprintf("op %q: use one of %v", c.Op, condOps)}
		}
		v := bytes.TrimSpace(c.Value)
		if len(v) == 0 {
			return nil, &ArgError{Field: field, Reason: "value is required (a string, number, boolean or null)"}
		}
		if v[0] == '{' || v[0] == '[' {
			return nil, &ArgError{Field: field, Reason: "value must be a string, number, boolean or null"}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, &ArgError{Field: field, Reason: fmt.Sprintf("value: %v", err)}
		}
		c.Value = buf.Bytes()
	}
	return &a, nil
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
