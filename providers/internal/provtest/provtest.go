package provtest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/providers/internal/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Fixture returns the recorded answer testdata/replay/name of the package
// under test.
func Fixture(name string) replay.Response {
	return replay.File(filepath.Join("testdata", "replay", name))
}

// WeatherTool is the get_weather tool definition the request goldens hold.
func WeatherTool() harness.ToolDefinition {
	return harness.ToolDefinition{
		Name:        "get_weather",
		Description: "Report the current weather of a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"the city to report on"}},"required":["city"],"additionalProperties":false}`),
	}
}

// TimeTool is the get_time tool definition the request goldens hold.
func TimeTool() harness.ToolDefinition {
	return harness.ToolDefinition{
		Name:        "get_time",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}}}`),
	}
}

type weatherInput struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

// Weather is a runnable get_weather tool for agent tests; it reports
// "<city>: 18°C, light rain". Its definition matches WeatherTool.
func Weather() *harness.Tool {
	return harness.MustTool(harness.NewTool("get_weather", "Report the current weather of a city.",
		func(_ context.Context, in weatherInput) (string, error) {
			return fmt.Sprintf("%s: 18°C, light rain", in.City), nil
		}))
}

// CheckGolden compares got with testdata/name, or rewrites it with -update.
func CheckGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Endpoint describes the requests a provider sends.
type Endpoint struct {
	// Path is the URL path every request goes to, with method POST.
	Path string
	// APIKey is the key the test provider is built with; requests must
	// carry "Authorization: Bearer <APIKey>".
	APIKey string
	// Header, when set, checks further headers of request i.
	Header func(t *testing.T, i int, h http.Header)
}

// CheckRequest checks the method, path and headers of request i that srv
// received and compares its body, indented, with the golden file.
func (e Endpoint) CheckRequest(t *testing.T, srv *replay.Server, i int, golden string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("server got %d requests, want at least %d", len(reqs), i+1)
	}
	r := reqs[i]
	if r.Method != http.MethodPost || r.Path != e.Path {
		t.Errorf("request %d: %s %s, want POST %s", i, r.Method, r.Path, e.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+e.APIKey {
		t.Errorf("request %d: Authorization %q", i, got)
	}
	if e.Header != nil {
		e.Header(t, i, r.Header)
	}
	body, err := replay.Indent(r.Body)
	if err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", i, err, r.Body)
	}
	CheckGolden(t, golden, body)
}

// ResponseJSON encodes a response for a golden file; FirstChunkAt is
// checked by the caller and left out.
func ResponseJSON(t *testing.T, r *harness.ModelResponse) []byte {
	t.Helper()
	c := *r
	c.FirstChunkAt = time.Time{}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
