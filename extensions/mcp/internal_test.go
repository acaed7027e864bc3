package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolName(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"files", "read", "files__read"},
		{"files", "fs.read/v2", "files__fs_read_v2"},
		{"web", "héllo wörld", "web__h__llo_w__rld"},
		{"x", strings.Repeat("a", 100), "x__" + strings.Repeat("a", 61)},
	} {
		if got := toolName(c.server, c.tool); got != c.want {
			t.Errorf("toolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
}

func TestBuildToolsSkips(t *testing.T) {
	obj := map[string]any{"type": "object"}
	s := &server{name: "srv"}
	tools, entries, skipped := s.buildTools([]*sdk.Tool{
		{Name: "a.b", InputSchema: obj},
		{Name: "a_b", InputSchema: obj},                              // same harness name
		{Name: "str", InputSchema: map[string]any{"type": "string"}}, // not an object
		{Name: "none"}, // no schema
		{Name: "re", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"type": "string", "pattern": "("}}}},
		{Name: "ok", Title: "Titled", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
	}, nil, false)
	if len(tools) != 2 || tools[0].Name != "srv__a_b" || tools[1].Name != "srv__ok" || entries[1].description != "Titled" {
		t.Fatalf("tools %v, entries %+v", tools, entries)
	}
	if !tools[1].Deferred || string(tools[1].InputSchema) != `{"properties":{"q":{"type":"string"}},"type":"object"}` {
		t.Errorf("tool %+v", tools[1])
	}
	want := map[string]string{
		"a_b":  `its name srv__a_b is taken by the tool "a.b"`,
		"str":  `malformed input schema: type is "string", want "object"`,
		"none": "malformed input schema: missing",
		"re":   "malformed input schema:",
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %+v", skipped)
	}
	for _, sk := range skipped {
		if !strings.HasPrefix(sk.reason, want[sk.name]) {
			t.Errorf("skipped %s: %q, want %q", sk.name, sk.reason, want[sk.name])
		}
	}
}

func schema(props string) any {
	var v any
	if err := json.Unmarshal([]byte(`{"type":"object","properties":`+props+`}`), &v); err != nil {
		panic(err)
	}
	return v
}

func TestQuestion(t *testing.T) {
	for _, c := range []struct {
		name    string
		params  sdk.ElicitParams
		kind    harness.AskKind
		options []string
		answer  harness.Answer
		content map[string]any
		ok      bool
	}{
		{"no fields yes", sdk.ElicitParams{Message: "Go?"}, harness.AskConfirm, nil, harness.Answer{Confirmed: true}, map[string]any{}, true},
		{"no fields no", sdk.ElicitParams{Message: "Go?"}, harness.AskConfirm, nil, harness.Answer{}, map[string]any{}, false},
		{"boolean", sdk.ElicitParams{RequestedSchema: schema(`{"ok":{"type":"boolean"}}`)}, harness.AskConfirm, nil, harness.Answer{Confirmed: false}, map[string]any{"ok": false}, true},
		{"enum", sdk.ElicitParams{RequestedSchema: schema(`{"env":{"type":"string","enum":["dev","prod"]}}`)}, harness.AskSelect, []string{"dev", "prod"}, harness.Answer{Choice: "prod"}, map[string]any{"env": "prod"}, true},
		{"string", sdk.ElicitParams{RequestedSchema: schema(`{"name":{"type":"string"}}`)}, harness.AskInput, nil, harness.Answer{Text: "Ada"}, map[string]any{"name": "Ada"}, true},
		{"integer", sdk.ElicitParams{RequestedSchema: schema(`{"n":{"type":"integer"}}`)}, harness.AskInput, nil, harness.Answer{Text: " 42 "}, map[string]any{"n": int64(42)}, true},
		{"bad integer", sdk.ElicitParams{RequestedSchema: schema(`{"n":{"type":"integer"}}`)}, harness.AskInput, nil, harness.Answer{Text: "many"}, nil, false},
		{"number", sdk.ElicitParams{RequestedSchema: schema(`{"x":{"type":"number"}}`)}, harness.AskInput, nil, harness.Answer{Text: "2.5"}, map[string]any{"x": 2.5}, true},
		{"several", sdk.ElicitParams{RequestedSchema: schema(`{"a":{"type":"string"},"b":{"type":"integer"}}`)}, harness.AskInput, nil, harness.Answer{Text: `{"a":"x","b":1}`}, map[string]any{"a": "x", "b": float64(1)}, true},
		{"several not JSON", sdk.ElicitParams{RequestedSchema: schema(`{"a":{"type":"string"},"b":{"type":"integer"}}`)}, harness.AskInput, nil, harness.Answer{Text: "x"}, nil, false},
		{"url", sdk.ElicitParams{Mode: "url", URL: "https://example.com/auth"}, harness.AskConfirm, nil, harness.Answer{Confirmed: true}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := question("srv", &c.params)
			if err != nil {
				t.Fatal(err)
			}
			if q.ask.Kind != c.kind || !reflect.DeepEqual(q.ask.Options, c.options) || !strings.HasPrefix(q.ask.Prompt, "[MCP server srv] ") {
				t.Errorf("ask %+v", q.ask)
			}
			content, ok, _ := q.answer(c.answer)
			if ok != c.ok || (ok && !reflect.DeepEqual(content, c.content)) {
				t.Errorf("answer: %v %v, want %v %v", content, ok, c.content, c.ok)
			}
		})
	}
}

// FuzzQuestion feeds requested schemas from a server, which is untrusted:
// question must return an error or a valid ask, and never panic.
func FuzzQuestion(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"boolean"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`,
		`{"properties":{"a":{"enum":[1,2]}}}`,
		`{"properties":[]}`,
		`null`, `"x"`, `{"properties":{"a":null}}`,
	} {
		f.Add(seed, "yes")
	}
	f.Fuzz(func(t *testing.T, rawSchema, text string) {
		var v any
		if json.Unmarshal([]byte(rawSchema), &v) != nil {
			return
		}
		q, err := question("srv", &sdk.ElicitParams{Message: "m", RequestedSchema: v})
		if err != nil {
			return
		}
		if q.ask.Kind == "" || q.ask.Prompt == "" || (q.ask.Kind == harness.AskSelect && len(q.ask.Options) == 0) {
			t.Fatalf("ask %+v", q.ask)
		}
		q.answer(harness.Answer{Text: text, Choice: text, Confirmed: text != ""})
	})
}

// FuzzCheckSchema: an input schema from a server is either refused or
// compiles as the harness compiles it.
func FuzzCheckSchema(f *testing.F) {
	for _, seed := range []string{`{"type":"object"}`, `{"type":"object","properties":{"q":{"type":42}}}`, `{"type":["object"]}`, `[]`, `{"type":"object","$ref":"#/x"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			return
		}
		out, err := checkSchema(v)
		if err != nil {
			return
		}
		tool := &harness.Tool{Name: "t", InputSchema: out, Handler: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
		a, err := harness.New(harness.WithProvider(harness.ProviderFunc(nil)), harness.WithStateDir(""), harness.WithTools(tool))
		if err != nil {
			t.Fatalf("checkSchema accepted %s, the harness refuses it: %v", raw, err)
		}
		a.Close(context.Background())
	})
}

// An error that quotes an HTTP server's URL loses the URL's credentials
// (Transport.redactErr) and what the built-in rules find (redactError),
// however they are applied one after the other, and still unwraps to the
// original error.
func TestRedactErrURLAndRules(t *testing.T) {
	tr := StreamableHTTP("http://user:pw-hunter2@127.0.0.1:1/mcp?token=tok-abcdef")
	orig := errors.New(`Post "http://user:pw-hunter2@127.0.0.1:1/mcp?token=tok-abcdef": EOF; api_key=sk-visible-123`)
	for name, err := range map[string]error{
		"redactErr then redactError": redactError(tr.redactErr(orig)),
		"wrapped in between":         redactError(fmt.Errorf("connect: %w", tr.redactErr(orig))),
		"twice":                      redactError(redactError(tr.redactErr(orig))),
	} {
		for _, secret := range []string{"pw-hunter2", "tok-abcdef", "sk-visible-123"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: %q shows %s", name, err, secret)
			}
		}
		if !errors.Is(err, orig) {
			t.Errorf("%s: does not unwrap to the original error", name)
		}
	}
}

func TestMediaType(t *testing.T) {
	for in, want := range map[string]string{
		"image/png":                         "image/png",
		"IMAGE/PNG":                         "image/png",
		"text/csv; charset=utf-8":           "text/csv",
		"application/vnd.ms-excel":          "application/vnd.ms-excel",
		"png":                               "",
		"image/":                            "",
		"/png":                              "",
		"image/png/x":                       "",
		"":                                  "",
		"image/" + strings.Repeat("p", 128): "",
	} {
		got, err := mediaType(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("mediaType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// An isError result's media are notes, even malformed ones: error results
// carry no parts.
func TestResultContentOfErrorResult(t *testing.T) {
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
		&sdk.TextContent{Text: "failed"},
		&sdk.ImageContent{MIMEType: "png", Data: []byte("x")},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "a://b", MIMEType: "bad", Blob: []byte("yy")}},
	}}
	c, err := resultContent(res, "", false)
	if err != nil || len(c.parts) != 0 {
		t.Fatalf("%v, %d parts", err, len(c.parts))
	}
	if got := strings.Join(c.text, "\n"); got != "failed\n[image: png, 1 bytes]\n[resource: a://b, bad, 2 bytes]" {
		t.Errorf("text %q", got)
	}
}
