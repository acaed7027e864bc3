package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

var fastSchemas = []string{
	`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},"t":{"type":"number"}},"required":["city"],"additionalProperties":false}`,
	`{"type":"object","properties":{"q":{"type":"string","description":"query"}}}`,
	`{"type":"object","properties":{},"additionalProperties":false}`,
}

func compiled(t testing.TB, schema string) *Tool {
	tool := &Tool{Name: "t", InputSchema: json.RawMessage(schema), Handler: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
	if err := tool.prepare(); err != nil {
		t.Fatal(err)
	}
	if tool.fast == nil {
		t.Fatalf("schema %s should take the fast path", schema)
	}
	return tool
}

// full runs the library validator alone.
func full(tool *Tool, in []byte) bool {
	var v any
	if json.Unmarshal(in, &v) != nil {
		return false
	}
	return tool.schema.Validate(v) == nil
}

func TestFlatCheckAgreesWithValidator(t *testing.T) {
	tool := compiled(t, fastSchemas[0])
	cases := []struct {
		in   string
		fast bool // the fast path may say yes
		ok   bool // the validator says yes
	}{
		{`{"city":"Paris"}`, true, true},
		{` { "city" : "Pa\"ris" , "days": 3, "metric": true, "t": -2 } `, true, true},
		{`{"days":3}`, false, false},
		{`{"city":3}`, false, false},
		{`{"city":"x","extra":1}`, false, false},
		{`{"city":"x","days":1.5}`, false, false},
		{`{"city":"x","t":1.5}`, false, true}, // fractions go to the validator
		{`{"city":null}`, false, false},
		{`{"city":"x","city":"y"}`, true, true},
		{`{"days":1,"days":2}`, false, false},
		{`{"city":"x"} trailing`, false, false},
		{`{"ci\u0074y":"x"}`, false, true}, // escaped key goes to the validator
		{`{"city":"x",}`, false, false},
		{`{"city":"x","days":01}`, false, false},
		{`{"city":"x","days":123456789012345}`, true, true},
		{`{"city":"x","days":1234567890123456}`, false, true},                  // long numbers go to the validator,
		{`{"city":"x","days":` + strings.Repeat("9", 400) + `}`, false, false}, // which rejects one out of float64's range
		{`[]`, false, false},
		{``, false, false},
	}
	for _, c := range cases {
		got := tool.fast.check([]byte(c.in))
		if got != c.fast {
			t.Errorf("fast(%s) = %v, want %v", c.in, got, c.fast)
		}
		if ok := full(tool, []byte(c.in)); ok != c.ok {
			t.Errorf("validator(%s) = %v, want %v", c.in, ok, c.ok)
		}
	}
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","minLength":3}}}`,
		`{"type":"object","properties":{"a":{"type":"array"}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1}`,
	} {
		tool := &Tool{Name: "t", InputSchema: json.RawMessage(s), Handler: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
		if err := tool.prepare(); err != nil {
			t.Fatal(err)
		}
		if tool.fast != nil {
			t.Errorf("schema %s has constraints the fast path must not take", s)
		}
	}
}

// FuzzFlatCheck checks that the fast path never accepts what the schema
// validator rejects.
func FuzzFlatCheck(f *testing.F) {
	for _, s := range []string{`{"city":"Paris"}`, `{"city":"x","days":3,"metric":false,"t":7}`, `{}`, `{"q":"a\\"b"}`, `{"city":"x","x":[1]}`, `{"city":"\u00e9"}`} {
		for i := range fastSchemas {
			f.Add(i, []byte(s))
		}
	}
	tools := make([]*Tool, len(fastSchemas))
	for i, s := range fastSchemas {
		tools[i] = compiled(f, s)
	}
	f.Fuzz(func(t *testing.T, which int, in []byte) {
		if which < 0 {
			which = -which
		}
		tool := tools[which%len(tools)]
		if tool.fast.check(in) && !full(tool, in) {
			t.Fatalf("fast path accepted %q, which the validator rejects", in)
		}
	})
}

// TestValidateBoundsHugeValues checks that an invalid argument of 10 MB
// gives an invalid-arguments error of bounded size, on a schema of the
// fast path (which leaves the wording to the validator) and on schemas
// only the validator judges; the error keeps its start and what the
// schema wanted.
func TestValidateBoundsHugeValues(t *testing.T) {
	huge := strings.Repeat("a", 10<<20)
	digits := strings.Repeat("1", 10<<20)
	cases := []struct {
		name, schema, in string
		fast             bool
		says             string
	}{
		{"fast: string for an integer", fastSchemas[0], `{"city":"x","days":"` + huge + `"}`, true, `want "integer"`},
		{"fast: huge unknown property", fastSchemas[0], `{"city":"x","` + huge + `":1}`, true, "unexpected additional properties"},
		{"fast: number out of range", fastSchemas[0], `{"city":"x","t":` + digits + `}`, true, "not valid JSON"},
		{"enum", `{"type":"object","properties":{"op":{"type":"string","enum":["a","b"]}}}`, `{"op":"` + huge + `"}`, false, "does not equal any of: [a b]"},
		{"maxLength", `{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`, `{"s":"` + huge + `"}`, false, "more than 3"},
		{"pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"^x$"}}}`, `{"s":"` + huge + `"}`, false, `"^x$"`},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, `{"o":{"n":"` + huge + `"}}`, false, `want "integer"`},
		{"array item", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}`, `{"l":[1,"` + huge + `"]}`, false, `want "integer"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := &Tool{Name: "t", InputSchema: json.RawMessage(c.schema), Handler: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
			if err := tool.prepare(); err != nil {
				t.Fatal(err)
			}
			if (tool.fast != nil) != c.fast {
				t.Fatalf("fast path: %v, want %v", tool.fast != nil, c.fast)
			}
			_, err := tool.validate(json.RawMessage(c.in))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > maxErrorText+100 {
				t.Errorf("error is %d bytes; it starts %.200q", len(msg), msg)
			}
			if !strings.Contains(msg, c.says) || !strings.Contains(msg, "bytes cut]") {
				t.Errorf("error %q lacks %q or the cut note", msg, c.says)
			}
		})
	}
}
