package harness

import (
	"context"
	"encoding/json"
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
