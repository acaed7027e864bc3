package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	t.Setenv(flight.EnvDir, t.TempDir())
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`incident bundle: (\S+)`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "flightrec show "+m[1]) {
		t.Fatalf("output:\n%s", out.String())
	}
	b, err := flight.ReadBundleFile(m[1], flight.ReadOptions{KeepArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Reason != "run_failure" || b.Manifest.Spans == 0 || len(b.Artifacts()) != 1 {
		t.Errorf("manifest %+v, artifacts %v", b.Manifest, b.Artifacts())
	}
	// The recorder installs before tracing whatever the order given, so the
	// bundle holds the whole tree, the agent span that ends last included.
	data, _ := b.Member(flight.SpansName)
	spans, err := otlpjson.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	var spanNames []string
	for _, rs := range spans.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				spanNames = append(spanNames, sp.Name)
			}
		}
	}
	if !slices.Contains(spanNames, "invoke_agent billing-assistant") {
		t.Errorf("bundle spans %v lack the agent span", spanNames)
	}
	names := []string{flight.ManifestName}
	for _, mem := range b.Members {
		names = append(names, mem.Name)
	}
	for _, n := range names {
		data, _ := b.Member(n)
		for _, secret := range []string{"EXAMPLE0000SECRET", "eyJhbGciOiJIUzI1NiJ9"} {
			if strings.Contains(string(data), secret) {
				t.Errorf("%s holds %q", n, secret)
			}
		}
	}
	if c := b.Manifest.Redaction.Counts; c[flight.RuleAnthropicKey] == 0 || c[flight.RuleBearer] == 0 {
		t.Errorf("redaction counts %v", c)
	}
}
