package flight_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/recording"
)

type bigIn struct {
	N int `json:"n"`
}

// bigContent is the result of call n of the big tool: over spill's
// threshold, different for each n.
func bigContent(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < 40_000; i++ {
		fmt.Fprintf(&b, "row %d of result %d: %s\n", i, n, strings.Repeat("abcdefgh", 4))
	}
	return b.String()
}

func bigTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("big", "Return a big result.", func(_ context.Context, in bigIn) (string, error) {
		return bigContent(in.N), nil
	}))
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// bigScript calls the big tool n times, then runs last.
func bigScript(n int, last harnesstest.Response) []harnesstest.Response {
	var script []harnesstest.Response
	for i := 0; i < n; i++ {
		script = append(script, harnesstest.CallTool(fmt.Sprintf("c%d", i), "big", map[string]int{"n": i}))
	}
	return append(script, last)
}

// exportArtifacts exports the recording with artifacts and returns the
// bundle, verified.
func exportArtifacts(t *testing.T, rec string) *flight.Bundle {
	t.Helper()
	return exportWith(t, rec, flight.ExportOptions{IncludeArtifacts: true})
}

// exportWith exports the recording rec with opts and returns the bundle,
// verified.
func exportWith(t *testing.T, rec string, opts flight.ExportOptions) *flight.Bundle {
	t.Helper()
	var buf bytes.Buffer
	if _, err := flight.ExportJournal(context.Background(), rec, &buf, opts); err != nil {
		t.Fatal(err)
	}
	b, err := flight.ReadBundle(&buf, flight.ReadOptions{KeepArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatal(err)
	}
	return b
}

// checkArtifacts asserts that b holds exactly the results of calls
// 0..n-1 of the big tool.
func checkArtifacts(t *testing.T, b *flight.Bundle, n int) {
	t.Helper()
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[sha(bigContent(i))] = true
	}
	names := b.Artifacts()
	if len(names) != n {
		t.Fatalf("%d artifacts %v, want %d; missing %v", len(names), names, n, b.Manifest.Missing())
	}
	sums := map[string]string{}
	for _, m := range b.Members {
		sums[m.Name] = m.SHA256
	}
	for _, name := range names {
		if !strings.HasPrefix(name, flight.ArtifactsDir+"spill/") || !want[sums[name]] {
			t.Errorf("artifact %s has SHA-256 %s, not one of the results", name, sums[name])
		}
		delete(want, sums[name])
	}
}

// TestArtifactsAfterClose: with spill's default temporary store, which
// Close removes, an export after Close still includes every result.
func TestArtifactsAfterClose(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	rec := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true))
	a, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(bigScript(3, harnesstest.Reply("done"))...)),
		harness.WithTools(bigTool()),
		harness.WithExtensions(rec, spill.New(spill.WithTempParent(tmp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("spill left its temporary directory: %v", ents)
	}
	if st := rec.Stats(); st.ArtifactsKept != 3 || st.ArtifactsSkipped != 0 {
		t.Errorf("stats %+v", st)
	}
	b := exportArtifacts(t, filepath.Join(dir, "s"))
	checkArtifacts(t, b, 3)
	if len(b.Manifest.MissingArtifacts) != 0 {
		t.Errorf("missing %v", b.Manifest.MissingArtifacts)
	}
}

// TestArtifactsMissing: artifacts over the limit and copies deleted since
// are named in the export with the reason.
func TestArtifactsMissing(t *testing.T) {
	dir := t.TempDir()
	limit := int64(len(bigContent(0)) + len(bigContent(1)) + 10) // two fit, the third does not
	rec := flight.New(flight.WithDir(dir), flight.WithIncludeArtifacts(true), flight.WithArtifactLimit(limit))
	a, err := harness.New(
		harness.WithSessionID("s"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(bigScript(3, harnesstest.Reply("done"))...)),
		harness.WithTools(bigTool()),
		harness.WithExtensions(rec, spill.New(spill.WithTempParent(t.TempDir()))),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := rec.Stats(); st.ArtifactsKept != 2 || st.ArtifactsSkipped != 1 {
		t.Errorf("stats %+v, want 2 kept and 1 skipped", st)
	}
	recDir := filepath.Join(dir, "s")
	kept, _ := filepath.Glob(filepath.Join(recDir, "artifacts", "spill", "*"))
	if len(kept) != 2 {
		t.Fatalf("copies %v", kept)
	}
	if err := os.Remove(kept[0]); err != nil {
		t.Fatal(err)
	}
	b := exportArtifacts(t, recDir)
	if n := len(b.Artifacts()); n != 1 {
		t.Errorf("%d artifacts, want 1", n)
	}
	missing := b.Manifest.Missing()
	if len(missing) != 2 {
		t.Fatalf("missing %+v, want 2", missing)
	}
	reasons := []string{missing[0].Reason, missing[1].Reason}
	slices.Sort(reasons)
	if !strings.Contains(reasons[0], "artifact limit") && !strings.Contains(reasons[1], "artifact limit") {
		t.Errorf("no reason names the limit: %q", reasons)
	}
	if !strings.Contains(strings.Join(reasons, "|"), "no such file") {
		t.Errorf("no reason names the deleted copy: %q", reasons)
	}
	for _, m := range missing {
		if !strings.HasPrefix(m.Name, "spill/") {
			t.Errorf("missing artifact named %q", m.Name)
		}
	}
}

// artifactChildEnv, when set, makes the test binary run runArtifactChild:
// an agent that spills a number of results, then blocks in a tool until
// killed.
const artifactChildEnv = "FLIGHT_TEST_ARTIFACT_DIR"

func runArtifactChild() int {
	dir := os.Getenv(artifactChildEnv)
	n, _ := strconv.Atoi(os.Getenv("FLIGHT_TEST_ARTIFACT_N"))
	rec := flight.New(flight.WithDir(filepath.Join(dir, "rec")), flight.WithIncludeArtifacts(true))
	block := harness.MustTool(harness.NewTool("wait", "Block.", func(ctx context.Context, in echoIn) (string, error) {
		fmt.Println("blocked")
		select {} // until SIGKILL
	}))
	a, err := harness.New(
		harness.WithSessionID("crash"),
		harness.WithLogger(slog.New(slog.DiscardHandler)),
		harness.WithProvider(harnesstest.NewScriptedProvider(bigScript(n, harnesstest.CallTool("w", "wait", map[string]string{"text": "x"}))...)),
		harness.WithTools(bigTool(), block),
		harness.WithExtensions(rec, spill.New(spill.WithTempParent(filepath.Join(dir, "spill")))),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a.Run(context.Background(), "go")
	return 1
}

// TestArtifactsSIGKILL: a process killed after spilling N results leaves
// a recording whose export holds the N results, even once the spill
// directory is gone.
func TestArtifactsSIGKILL(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "spill"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), artifactChildEnv+"="+dir, "FLIGHT_TEST_ARTIFACT_N="+strconv.Itoa(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "blocked" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("child ended; stderr:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not block in time; stderr:\n%s", stderr.String())
	}
	// The copies are made as each call ends, without waiting for the end
	// of the run: wait until the index lists them all, then kill.
	rec := filepath.Join(dir, "rec", "crash")
	start := time.Now()
	for keptCopies(rec) < n && time.Since(start) < 10*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d copies indexed %v after the child blocked", keptCopies(rec), time.Since(start).Round(time.Millisecond))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v", cmd.ProcessState)
	}
	// The spill store goes away (a temporary directory cleaner, say).
	if err := os.RemoveAll(filepath.Join(dir, "spill")); err != nil {
		t.Fatal(err)
	}
	b := exportArtifacts(t, rec)
	checkArtifacts(t, b, n)
}

// keptCopies counts the artifacts that the index of the recording in dir
// lists with a copy.
func keptCopies(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, recording.ArtifactsIndexName))
	if err != nil {
		return 0
	}
	var arts []flight.IndexedArtifact
	if json.Unmarshal(data, &arts) != nil {
		return 0
	}
	n := 0
	for _, a := range arts {
		if a.Kept != "" {
			n++
		}
	}
	return n
}
