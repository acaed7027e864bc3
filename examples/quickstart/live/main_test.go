package main

import "testing"

func TestChooseBackend(t *testing.T) {
	tests := []struct {
		name, anthropic, openai, model string
		label                          string
	}{
		{"offline", "", "", "", "scripted (offline)"},
		{"openai", "", "sk-test", "", "openai, gpt-5.4-mini"},
		{"anthropic first", "sk-ant-test", "sk-test", "", "anthropic, claude-haiku-5-5"},
		{"model override", "sk-ant-test", "", "claude-x", "anthropic, claude-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_API_KEY", tt.anthropic)
			t.Setenv("OPENAI_API_KEY", tt.openai)
			t.Setenv("HARNESSX_MODEL", tt.model)
			b, err := chooseBackend()
			if err != nil {
				t.Fatal(err)
			}
			if b.Label != tt.label {
				t.Errorf("label %q, want %q", b.Label, tt.label)
			}
			if b.Provider == nil {
				t.Error("no provider")
			}
		})
	}
}
