package spill

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
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
