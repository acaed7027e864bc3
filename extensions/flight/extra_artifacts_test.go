package flight_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// TestExportCallerArtifacts: artifacts the caller fetched itself (as
// flightrec does from an S3 store) go into the bundle when their SHA-256
// matches, are named missing when it does not, and the caller's missing
// ones are named with their reasons; without IncludeArtifacts none is
// added.
func TestExportCallerArtifacts(t *testing.T) {
	dir := t.TempDir()
	a, err := harness.New(harness.WithSessionID("s"), harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("done"))),
		harness.WithExtensions(flight.New(flight.WithDir(dir))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	good, bad := filepath.Join(files, "good"), filepath.Join(files, "bad")
	os.WriteFile(good, []byte("stored result\n"), 0o600)
	os.WriteFile(bad, []byte("changed result\n"), 0o600)
	opts := flight.ExportOptions{
		Artifacts: []harness.Artifact{
			{Name: "spill/res_1.txt", Path: good, Size: 14, SHA256: sha("stored result\n")},
			{Name: "spill/res_2.txt", Path: bad, Size: 14, SHA256: sha("stored result\n")},
		},
		MissingArtifacts: []flight.MissingArtifact{{Name: "spill/res_3.txt", Reason: "not found in s3://b/p"}},
	}
	export := func(include bool) *flight.Bundle {
		opts.IncludeArtifacts = include
		return exportWith(t, filepath.Join(dir, "s"), opts)
	}
	b := export(true)
	if got := b.Artifacts(); !slices.Equal(got, []string{flight.ArtifactsDir + "spill/res_1.txt"}) {
		t.Fatalf("artifacts %v", got)
	}
	if data, _ := b.Member(flight.ArtifactsDir + "spill/res_1.txt"); string(data) != "stored result\n" {
		t.Errorf("artifact content %q", data)
	}
	want := []flight.MissingArtifact{
		{Name: "spill/res_2.txt", Reason: "changed since it was recorded"},
		{Name: "spill/res_3.txt", Reason: "not found in s3://b/p"},
	}
	if got := b.Manifest.Missing(); !slices.Equal(got, want) {
		t.Errorf("missing %v, want %v", got, want)
	}
	if b := export(false); len(b.Artifacts()) != 0 || len(b.Manifest.MissingArtifacts) != 0 {
		t.Errorf("without IncludeArtifacts: %v, %v", b.Artifacts(), b.Manifest.MissingArtifacts)
	}
}
