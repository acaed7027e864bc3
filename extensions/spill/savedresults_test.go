package spill

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestSavedResults reads back what OnSaveSession saved, as flightrec does
// with a recording's session snapshot, and rejects what a load rejects.
func TestSavedResults(t *testing.T) {
	store := &memStore{data: map[string][]byte{}}
	e := New(WithStore(store))
	r := spillString(t, e, "dump", csvData(2000))
	st, err := e.OnSaveSession(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(st)
	got, err := SavedResults(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Meta != r.Meta || got[0].Dir != "" {
		t.Fatalf("SavedResults = %+v, want %+v without a directory", got, r.Meta)
	}
	if got[0].ArtifactName() != "spill/"+r.ID+".csv" {
		t.Errorf("ArtifactName = %q", got[0].ArtifactName())
	}
	if _, err := SavedResults(json.RawMessage(`{"version": 1, "results": [{"id": "../x"}]}`)); !errors.Is(err, ErrBadState) {
		t.Errorf("invalid state: %v", err)
	}
}

// TestEngineSnapshotFollowsResults checks that StateVersion moves with
// every change of the results, so that an engine snapshot, which reuses
// the last encoding while it stays, never misses a result.
func TestEngineSnapshotFollowsResults(t *testing.T) {
	ctx := context.Background()
	e := New(WithStore(&memStore{data: map[string][]byte{}}))
	a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(e))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	snap := harness.AsSnapshot(ctx)
	count := func() int {
		t.Helper()
		raw, err := a.SaveExtensionState(snap)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]json.RawMessage
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		rs, err := SavedResults(st["spill"])
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d results before any spill", n)
	}
	spillString(t, e, "dump", csvData(2000))
	if n := count(); n != 1 {
		t.Fatalf("%d results after a spill", n)
	}
	v := e.StateVersion()
	if n := count(); n != 1 || e.StateVersion() != v {
		t.Fatalf("a snapshot changed the state: %d results, version %d -> %d", n, v, e.StateVersion())
	}
	saved, err := e.OnSaveSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(saved)
	e2 := New(WithStore(&memStore{data: map[string][]byte{}}))
	b, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithExtensions(e2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	v2 := e2.StateVersion()
	if err := b.LoadExtensionState(ctx, json.RawMessage(`{"spill":`+string(raw)+`}`)); err != nil {
		t.Fatal(err)
	}
	if e2.StateVersion() == v2 {
		t.Fatal("loading results did not move the version")
	}
	if err := e.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d results after Teardown", n)
	}
}
