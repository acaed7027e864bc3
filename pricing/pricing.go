package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/harnessx/harnessx/harness"
)

//go:embed prices.json
var builtin []byte

// EnvPrices is the environment variable that [FromEnv] reads: the path of
// a price file whose models are added to the built-in table (replacing
// those of the same name), or "off" (also "none", "false", "0") to turn
// pricing off.
const EnvPrices = "HARNESSX_PRICES"

// ErrInvalidPrices is wrapped by the [*FileError] that [Parse], [Load]
// and [FromEnv] return for a price file they cannot use.
var ErrInvalidPrices = errors.New("pricing: invalid price file")

// FileError says what is wrong with a price file, and where. It wraps
// [ErrInvalidPrices].
type FileError struct {
	// File is the file's name ("built-in" for the embedded table).
	File string
	// Line and Column locate a syntax or type error, from 1; zero when the
	// error is about a model's values.
	Line, Column int
	// Field names the JSON field at fault, e.g. models[3].cache_read, when
	// known.
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error describes the problem as file:line:column: field: reason.
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString("pricing: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalidPrices.
func (e *FileError) Unwrap() error { return ErrInvalidPrices }

// Rates are prices in US dollars per million tokens of each kind.
type Rates struct {
	// Input is the price of input tokens that are neither read from nor
	// written to the prompt cache.
	Input float64 `json:"input"`
	// Output is the price of output tokens that are not reasoning tokens.
	Output float64 `json:"output"`
	// CacheRead is the price of input tokens read from the prompt cache.
	CacheRead float64 `json:"cache_read"`
	// CacheWrite is the price of input tokens written to the prompt cache
	// (Anthropic's 5-minute cache write).
	CacheWrite float64 `json:"cache_write"`
	// Reasoning is the price of reasoning (thinking) tokens.
	Reasoning float64 `json:"reasoning"`
}

// Price is the price of one model.
type Price struct {
	Rates
	// Provider names the vendor ("anthropic", "openai"); informational.
	Provider string
	// LongContext, when set, replaces Rates for a request whose prompt
	// (harness.Usage.InputTokens, cache reads and writes included) has
	// more than LongContextAbove tokens.
	LongContext      *Rates
	LongContextAbove int64
}

// Cost is what one or more model requests cost, in US dollars, by kind of
// token. Total is the sum of the parts.
type Cost struct {
	Input, Output, CacheRead, CacheWrite, Reasoning, Total float64
}

// Add adds o to c.
func (c *Cost) Add(o Cost) {
	c.Input += o.Input
	c.Output += o.Output
	c.CacheRead += o.CacheRead
	c.CacheWrite += o.CacheWrite
	c.Reasoning += o.Reasoning
	c.Total += o.Total
}

// Table is a price table: models by exact name, each with its aliases
// (dated snapshots and the like). Lookups match names exactly, never by
// prefix, so an unknown model has no price rather than a wrong one. A
// Table is immutable once built, and its methods are safe for concurrent
// use; [Default] parses the built-in table on first use.
type Table struct {
	once   sync.Once
	src    []byte // to parse on first use; nil once parsed
	name   string
	asOf   string
	prices map[string]*Price
	models []string // the main names, in file order
	err    error
}

// Default returns the built-in table, for current Anthropic and OpenAI
// models (see [Table.AsOf] for its date). Each call returns a new Table,
// which parses the embedded file on its first use.
func Default() *Table { return &Table{src: builtin, name: "built-in"} }

// Parse parses a price file; name is used in errors. See the package
// documentation for the format.
func Parse(data []byte, name string) (*Table, error) {
	t := &Table{src: data, name: name}
	if err := t.load(); err != nil {
		return nil, err
	}
	return t, nil
}

// Load reads and parses the price file at path.
func Load(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	return Parse(data, path)
}

// FromEnv returns the table that HARNESSX_PRICES ([EnvPrices]) asks for:
// unset or empty, the built-in table; "off" (or "none", "false", "0"),
// nil, which turns pricing off; otherwise the path of a price file, whose
// models are added to the built-in table and replace those of the same
// name or alias. A file that cannot be read or parsed is an error (a
// [*FileError] naming the file and the line or field).
func FromEnv() (*Table, error) {
	v := strings.TrimSpace(os.Getenv(EnvPrices))
	switch strings.ToLower(v) {
	case "":
		return Default(), nil
	case "off", "none", "false", "0":
		return nil, nil
	}
	own, err := Load(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPrices, err)
	}
	return Default().Merge(own)
}

// Merge returns a table with t's models and o's, o's replacing t's of the
// same name or alias. Its date is o's.
func (t *Table) Merge(o *Table) (*Table, error) {
	if err := t.load(); err != nil {
		return nil, err
	}
	if err := o.load(); err != nil {
		return nil, err
	}
	m := &Table{name: o.name + " over " + t.name, asOf: o.asOf, prices: make(map[string]*Price, len(t.prices)+len(o.prices))}
	m.once.Do(func() {})
	for k, p := range t.prices {
		m.prices[k] = p
	}
	// A model of o replaces every name of the model it overrides, so that
	// no alias keeps the old price.
	for k, p := range o.prices {
		if old, ok := t.prices[k]; ok {
			for k2, p2 := range t.prices {
				if p2 == old {
					m.prices[k2] = p
				}
			}
		}
		m.prices[k] = p
	}
	for _, name := range t.models {
		if m.prices[name] == t.prices[name] {
			m.models = append(m.models, name)
		}
	}
	for _, name := range o.models {
		if !slices.Contains(m.models, name) {
			m.models = append(m.models, name)
		}
	}
	return m, nil
}

// AsOf returns the date of the table's prices (the file's as_of), or ""
// when the table cannot be parsed.
func (t *Table) AsOf() string {
	if t.load() != nil {
		return ""
	}
	return t.asOf
}

// Models returns the main names of the table's models (without aliases),
// in file order.
func (t *Table) Models() []string {
	if t.load() != nil {
		return nil
	}
	return slices.Clone(t.models)
}

// Err returns the error of parsing the table: nil for the built-in table
// and for tables from Parse, Load and Merge.
func (t *Table) Err() error { return t.load() }

// Lookup returns the price of model, matched exactly against the names
// and aliases of the table.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil || t.load() != nil {
		return Price{}, false
	}
	p, ok := t.prices[model]
	if !ok {
		return Price{}, false
	}
	return *p, true
}

// Cost returns what a model request with usage u cost with model's
// price, and false when the table has no price for model. u counts
// tokens as harness.Usage does: InputTokens includes the cache reads and
// writes, OutputTokens the reasoning tokens, so each token is priced once:
//
//	Input      = (InputTokens − CacheReadInputTokens − CacheCreationInputTokens) × input
//	CacheRead  = CacheReadInputTokens × cache_read
//	CacheWrite = CacheCreationInputTokens × cache_write
//	Output     = (OutputTokens − ReasoningTokens) × output
//	Reasoning  = ReasoningTokens × reasoning
//
// (prices per million tokens). A part that would be negative, from a
// provider that reports inconsistent counts, is zero. Above the model's
// long-context threshold, its long-context rates apply to every part.
func (t *Table) Cost(model string, u harness.Usage) (Cost, bool) {
	if t == nil || t.load() != nil {
		return Cost{}, false
	}
	p, ok := t.prices[model]
	if !ok {
		return Cost{}, false
	}
	r := &p.Rates
	if p.LongContext != nil && u.InputTokens > p.LongContextAbove {
		r = p.LongContext
	}
	const perToken = 1e-6
	c := Cost{
		Input:      float64(max(0, u.InputTokens-u.CacheReadInputTokens-u.CacheCreationInputTokens)) * r.Input * perToken,
		CacheRead:  float64(max(0, u.CacheReadInputTokens)) * r.CacheRead * perToken,
		CacheWrite: float64(max(0, u.CacheCreationInputTokens)) * r.CacheWrite * perToken,
		Output:     float64(max(0, u.OutputTokens-u.ReasoningTokens)) * r.Output * perToken,
		Reasoning:  float64(max(0, u.ReasoningTokens)) * r.Reasoning * perToken,
	}
	c.Total = c.Input + c.CacheRead + c.CacheWrite + c.Output + c.Reasoning
	return c, true
}

// USD returns the total of [Table.Cost]. Its signature fits
// harness.WithPricing: harness.WithPricing(table.USD).
func (t *Table) USD(model string, u harness.Usage) (float64, bool) {
	c, ok := t.Cost(model, u)
	return c.Total, ok
}

// ---- the file format ----

type fileRates struct {
	Input      *float64 `json:"input"`
	Output     *float64 `json:"output"`
	CacheRead  *float64 `json:"cache_read"`
	CacheWrite *float64 `json:"cache_write"`
	Reasoning  *float64 `json:"reasoning"`
}

type fileLong struct {
	Above *int64 `json:"above_input_tokens"`
	fileRates
}

type fileModel struct {
	Model    string    `json:"model"`
	Provider string    `json:"provider"`
	Aliases  []string  `json:"aliases"`
	Long     *fileLong `json:"long_context"`
	fileRates
}

type file struct {
	Format   int         `json:"format"`
	AsOf     string      `json:"as_of"`
	Currency string      `json:"currency"`
	Unit     string      `json:"unit"`
	Notes    string      `json:"notes"`
	Models   []fileModel `json:"models"`
}

func (t *Table) load() error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		if t.src == nil && t.prices != nil {
			return
		}
		t.err = t.parse(t.src)
		t.src = nil
	})
	return t.err
}

func (t *Table) parse(data []byte) error {
	fail := func(field, reason string) error { return &FileError{File: t.name, Field: field, Reason: reason} }
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return t.decodeError(data, err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return &FileError{File: t.name, Line: line, Column: col, Reason: "data after the price table"}
	}
	if f.Format != 1 {
		return fail("format", fmt.Sprintf("%d is not a known format (want 1)", f.Format))
	}
	if f.Currency != "" && f.Currency != "USD" {
		return fail("currency", fmt.Sprintf("%q: prices must be in USD", f.Currency))
	}
	if f.Unit != "" && f.Unit != "per million tokens" {
		return fail("unit", fmt.Sprintf("%q: prices must be per million tokens", f.Unit))
	}
	t.asOf = f.AsOf
	t.prices = make(map[string]*Price, len(f.Models)*2)
	for i, m := range f.Models {
		at := fmt.Sprintf("models[%d]", i)
		if strings.TrimSpace(m.Model) == "" {
			return fail(at+".model", "missing model name")
		}
		at = fmt.Sprintf("models[%d] (%s)", i, m.Model)
		p := &Price{Provider: m.Provider}
		var err error
		if p.Rates, err = m.fileRates.rates(at, fail); err != nil {
			return err
		}
		if m.Long != nil {
			if m.Long.Above == nil || *m.Long.Above <= 0 {
				return fail(at+".long_context.above_input_tokens", "missing or not positive")
			}
			long, err := m.Long.fileRates.rates(at+".long_context", fail)
			if err != nil {
				return err
			}
			p.LongContext, p.LongContextAbove = &long, *m.Long.Above
		}
		for j, name := range append([]string{m.Model}, m.Aliases...) {
			if strings.TrimSpace(name) == "" || name != strings.TrimSpace(name) {
				return fail(fmt.Sprintf("%s.aliases[%d]", at, j-1), fmt.Sprintf("%q is not a model name", name))
			}
			if _, dup := t.prices[name]; dup {
				return fail(at, fmt.Sprintf("%q is listed twice", name))
			}
			t.prices[name] = p
		}
		t.models = append(t.models, m.Model)
	}
	return nil
}

// rates checks the rates of a model: input and output are required; a
// cache read or write left out is priced as input, reasoning as output
// (the tokens they are a part of); none may be negative or not finite.
func (r fileRates) rates(at string, fail func(field, reason string) error) (Rates, error) {
	if r.Input == nil {
		return Rates{}, fail(at+".input", "missing")
	}
	if r.Output == nil {
		return Rates{}, fail(at+".output", "missing")
	}
	out := Rates{Input: *r.Input, Output: *r.Output, CacheRead: *r.Input, CacheWrite: *r.Input, Reasoning: *r.Output}
	if r.CacheRead != nil {
		out.CacheRead = *r.CacheRead
	}
	if r.CacheWrite != nil {
		out.CacheWrite = *r.CacheWrite
	}
	if r.Reasoning != nil {
		out.Reasoning = *r.Reasoning
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"input", out.Input}, {"output", out.Output}, {"cache_read", out.CacheRead}, {"cache_write", out.CacheWrite}, {"reasoning", out.Reasoning}} {
		if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			return Rates{}, fail(at+"."+v.name, fmt.Sprintf("%v is not a price (want a finite number >= 0)", v.v))
		}
	}
	return out, nil
}

// decodeError turns a JSON error into a FileError with the line, column
// and field.
func (t *Table) decodeError(data []byte, err error, off int64) error {
	fe := &FileError{File: t.name, Reason: err.Error()}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		fe.Line, fe.Column = position(data, se.Offset)
		fe.Reason = "syntax error: " + se.Error()
	case errors.As(err, &te):
		fe.Line, fe.Column = position(data, te.Offset)
		fe.Field = strings.ReplaceAll(te.Field, "fileRates.", "")
		fe.Reason = fmt.Sprintf("%s where %s was expected", te.Value, te.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		fe.Reason = "empty or truncated file"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		fe.Line, fe.Column = position(data, off)
		fe.Reason = strings.TrimPrefix(err.Error(), "json: ") + " (see the pricing package documentation for the format)"
	}
	return fe
}

// position returns the 1-based line and column of byte offset off.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
