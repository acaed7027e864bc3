package harness_test

import (
	"context"
	"slices"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

func TestInstructions(t *testing.T) {
	ctx := context.Background()
	var guard, web *harness.Handle
	ext := &funcExt{name: "guard", install: func(ec *harness.ExtensionContext) (err error) {
		if web, err = ec.Instructions().Set("web", "Cite your sources."); err != nil {
			return err
		}
		if guard, err = ec.Instructions().Set("guard", "No destructive commands."); err != nil {
			return err
		}
		_, err = ec.RegisterPromptProvider(func() string { return "Dynamic." })
		return err
	}}
	p := ht.NewScriptedProvider(ht.Reply("1"), ht.Reply("2"), ht.Reply("3"), ht.Reply("4"))
	rec := &ht.HookRecorder{}
	a := newAgent(t, p, harness.WithSystemPrompt("Base."), harness.WithExtensions(ext), rec.Option())
	run := func() string {
		t.Helper()
		if _, err := a.Run(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		reqs := p.Requests()
		return reqs[len(reqs)-1].System
	}
	// Sorted by key, whatever the order of Set; base first, providers last.
	if got, want := run(), "Base.\n\nNo destructive commands.\n\nCite your sources.\n\nDynamic."; got != want {
		t.Errorf("system = %q; want %q", got, want)
	}
	// Replacing keeps the key's place; the prefix key names the system part.
	h2, err := ext.ec.Instructions().Set("guard", "Never delete.")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run(), "Base.\n\nNever delete.\n\nCite your sources.\n\nDynamic."; got != want {
		t.Errorf("after replace, system = %q; want %q", got, want)
	}
	if got := rec.Of(harness.EventModelRequestStart)[1].Request.PrefixKey.Changed; !slices.Equal(got, []string{harness.PrefixPartSystem}) {
		t.Errorf("Changed = %q; want [system]", got)
	}
	// The replaced handle no longer owns the section.
	guard.Close()
	web.Close()
	if got, want := run(), "Base.\n\nNever delete.\n\nDynamic."; got != want {
		t.Errorf("after closing, system = %q; want %q", got, want)
	}
	h2.Close()
	if got, want := run(), "Base.\n\nDynamic."; got != want {
		t.Errorf("system = %q; want %q", got, want)
	}
	if _, err := ext.ec.Instructions().Set("", "x"); err == nil {
		t.Error("empty key accepted")
	}
	if _, err := ext.ec.Instructions().Set("a\nb", "x"); err == nil {
		t.Error("key with a newline accepted")
	}
}
