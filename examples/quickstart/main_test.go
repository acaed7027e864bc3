package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// clearEnv makes the run offline and sends its spans to a file in a
// temporary directory.
func clearEnv(t *testing.T) string {
	t.Helper()
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "HARNESSX_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LANGSMITH_API_KEY", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	t.Setenv("HARNESSX_TRACES_FILE", file)
	return file
}

func TestQuickstartOffline(t *testing.T) {
	file := clearEnv(t)
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"provider: scripted (offline)",
		`assistant → get_weather({"city":"Lisbon"})`,
		"tool ← get_weather: Lisbon: 18°C, light rain",
		"status: completed, steps: 2",
		"usage: input 880 (cache read 380, cache write 380), output 53 (reasoning 0), total 933",
		"traces: 4 spans to file " + file,
		"go run ./cmd/flightrec trace --last --traces " + file,
		"go run ./cmd/flightrec ui --traces " + file,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// The span tree: the agent span, then its two model calls and the tool
	// call between them, with durations and tokens.
	for _, re := range []string{
		`(?m)^invoke_agent quickstart +\S+ `,
		`(?m)^├── chat scripted-model +\S+ .*412.*cache write 380`,
		`(?m)^├── execute_tool get_weather +\S+`,
		`(?m)^└── chat scripted-model +\S+ .*468.*cache read 380`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("span tree lacks %s:\n%s", re, got)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the traces file was not written: %v", err)
	}
	if !bytes.Contains(data, []byte(`"invoke_agent quickstart"`)) {
		t.Errorf("the traces file lacks the agent span: %.300s", data)
	}
}

func TestLiveKey(t *testing.T) {
	tests := []struct{ anthropic, openai, want string }{
		{"", "", ""},
		{"sk-ant-x", "", "ANTHROPIC_API_KEY"},
		{"", "sk-x", "OPENAI_API_KEY"},
		{"sk-ant-x", "sk-x", "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		t.Setenv("ANTHROPIC_API_KEY", tt.anthropic)
		t.Setenv("OPENAI_API_KEY", tt.openai)
		if got := liveKey(); got != tt.want {
			t.Errorf("liveKey(%q, %q) = %q, want %q", tt.anthropic, tt.openai, got, tt.want)
		}
	}
	cmd := liveCommand(context.Background(), nil, nil, nil)
	if want := []string{"go", "run", livePackage}; strings.Join(cmd.Args, " ") != strings.Join(want, " ") {
		t.Errorf("live command %q, want %q", cmd.Args, want)
	}
}

// TestOfflineBuildHasNoVendorSDK keeps the first run quick: the offline
// quickstart must not compile the vendor SDKs (they are most of a cold
// build), and the live program it hands off to must exist.
func TestOfflineBuildHasNoVendorSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, sdk := range []string{"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go"} {
		if bytes.Contains(out, []byte(sdk)) {
			t.Errorf("the offline quickstart compiles %s", sdk)
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{.Name}}", livePackage).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "main" {
		t.Errorf("go list %s: %v %s", livePackage, err, out)
	}
}
