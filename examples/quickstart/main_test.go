package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestQuickstartOffline(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"provider: scripted (offline)",
		`assistant → get_weather({"city":"Lisbon"})`,
		"tool ← get_weather: Lisbon: 18°C, light rain",
		"status: completed, steps: 2",
		"usage: input 880 (cache read 380, cache write 380), output 53 (reasoning 0), total 933",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestChooseProviderFromEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("HARNESSX_MODEL", "")
	if _, label, model := chooseProvider(); label != "openai, gpt-5.4-mini" || model != "gpt-5.4-mini" {
		t.Errorf("openai: %q %q", label, model)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	t.Setenv("HARNESSX_MODEL", "claude-x")
	if _, label, model := chooseProvider(); label != "anthropic, claude-x" || model != "claude-x" {
		t.Errorf("anthropic: %q %q", label, model)
	}
}
