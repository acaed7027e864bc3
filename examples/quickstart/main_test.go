package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// envVars are the variables that could send the run elsewhere.
var envVars = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "HARNESSX_MODEL", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "LANGSMITH_API_KEY", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME"}

// clearEnv makes the run offline and sends its spans to a file in a
// temporary directory.
func clearEnv(t *testing.T) string {
	t.Helper()
	for _, k := range envVars {
		t.Setenv(k, "")
	}
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	t.Setenv("HARNESSX_TRACES_FILE", file)
	return file
}

func TestQuickstartOffline(t *testing.T) {
	file := clearEnv(t)
	var out, errb bytes.Buffer
	if err := run(context.Background(), &out, &errb, nil, os.Getenv); err != nil {
		t.Fatal(err)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr: %q", errb.String())
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

// TestOfflineWithAPIKeys runs the built quickstart, as `go run` does, with
// both vendor keys in the environment and no -live: it stays on the
// scripted model, succeeds, and says on stderr that it ignored the key.
func TestOfflineWithAPIKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the quickstart")
	}
	file := clearEnv(t)
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	// The keys are fake: a live call with them would fail, and the test
	// has no network beyond loopback anyway.
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-api03-fake", "OPENAI_API_KEY=sk-fake", "HARNESSX_TRACES_FILE="+file)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("quickstart: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	if !strings.HasPrefix(out.String(), "provider: scripted (offline)\n") || !strings.Contains(out.String(), "status: completed") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if want := "quickstart: offline (scripted model) although ANTHROPIC_API_KEY is set; -live calls the real model\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}

// TestLiveWithoutVendor is -live in the default build: one line on stderr
// saying how to build with a vendor, exit status 2, nothing run.
func TestLiveWithoutVendor(t *testing.T) {
	if anthropicBuilt || openaiBuilt {
		t.Skip("a vendor SDK is compiled in")
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no key", nil, "quickstart: -live: this build has no model SDK compiled in (they are left out of the offline build); " +
			"run ANTHROPIC_API_KEY=… go run -tags anthropic ./examples/quickstart -live, or OPENAI_API_KEY=… go run -tags openai ./examples/quickstart -live " +
			"(the first build with a vendor SDK takes minutes)"},
		{"openai key", map[string]string{"OPENAI_API_KEY": "sk-fake"}, "quickstart: -live: this build has no model SDK compiled in " +
			"(they are left out of the offline build); run go run -tags openai ./examples/quickstart -live (the first build with a vendor SDK takes minutes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), &out, &errb, []string{"-live"}, func(k string) string { return tt.env[k] })
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("err %v, want a usage error", err)
			}
			if got := "quickstart: " + err.Error(); got != tt.want {
				t.Errorf("message\n%s\nwant\n%s", got, tt.want)
			}
			if out.Len()+errb.Len() > 0 {
				t.Errorf("printed %q %q", out.String(), errb.String())
			}
		})
	}
}

// TestLiveBackend chooses among vendors as builds with tags would: the
// first compiled vendor whose key is set, else one error naming the
// missing key, and the tag that a key set for another vendor needs.
func TestLiveBackend(t *testing.T) {
	fake := func(label string) func() (demo.Backend, error) {
		return func() (demo.Backend, error) {
			return demo.Backend{Provider: harnesstest.NewScriptedProvider(), Label: label}, nil
		}
	}
	anth := vendor{name: "anthropic", keyVar: "ANTHROPIC_API_KEY"}
	oai := vendor{name: "openai", keyVar: "OPENAI_API_KEY"}
	anthBuilt, oaiBuilt := anth, oai
	anthBuilt.newProvider, oaiBuilt.newProvider = fake("anthropic"), fake("openai")
	for _, tt := range []struct {
		name      string
		vs        []vendor
		env       map[string]string
		label     string // chosen backend
		errString string // or the error
	}{
		{"anthropic", []vendor{anthBuilt, oai}, map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic", ""},
		{"openai", []vendor{anth, oaiBuilt}, map[string]string{"OPENAI_API_KEY": "k"}, "openai", ""},
		{"both built, both keys", []vendor{anthBuilt, oaiBuilt}, map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic", ""},
		{"both built, openai key", []vendor{anthBuilt, oaiBuilt}, map[string]string{"OPENAI_API_KEY": "k"}, "openai", ""},
		{"anthropic without key", []vendor{anthBuilt, oai}, nil, "",
			"-live: ANTHROPIC_API_KEY is not set (this build calls anthropic)"},
		{"anthropic built, openai key", []vendor{anthBuilt, oai}, map[string]string{"OPENAI_API_KEY": "k"}, "",
			"-live: ANTHROPIC_API_KEY is not set (this build calls anthropic); OPENAI_API_KEY is set: build with -tags openai to use it"},
		{"both built, no key", []vendor{anthBuilt, oaiBuilt}, nil, "",
			"-live: ANTHROPIC_API_KEY or OPENAI_API_KEY is not set (this build calls anthropic or openai)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := liveBackend(tt.vs, func(k string) string { return tt.env[k] })
			if tt.errString != "" {
				if err == nil || err.Error() != tt.errString {
					t.Errorf("err %v, want %q", err, tt.errString)
				}
				return
			}
			if err != nil || b.Label != tt.label {
				t.Errorf("backend %q, %v; want %q", b.Label, err, tt.label)
			}
		})
	}
}

// TestOfflineBuildHasNoVendorSDK keeps the first run quick: the default
// build compiles neither vendor SDK, and a build with one vendor's tag
// compiles that vendor's SDK only.
func TestOfflineBuildHasNoVendorSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	sdks := map[string]string{"anthropic": "github.com/anthropics/anthropic-sdk-go", "openai": "github.com/openai/openai-go"}
	for _, tag := range []string{"", "anthropic", "openai"} {
		out, err := exec.Command("go", "list", "-deps", "-tags", tag, ".").Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v", tag, err)
		}
		for name, sdk := range sdks {
			if has := bytes.Contains(out, []byte(sdk)); has != (name == tag) {
				t.Errorf("build with tags %q: compiles %s: %v", tag, sdk, has)
			}
		}
	}
}
