package s3store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// Worker processes: the test binary run again with workerEnv set to
// "spill" or "read" does one worker's part and exits.
const (
	workerEnv     = "S3STORE_TEST_WORKER"
	workerSession = "S3STORE_TEST_SESSION" // the session file
	workerID      = "S3STORE_TEST_ID"      // the result id, for "read"
	workerData    = 3 << 20                // bytes of the spilled result
)

func runWorker() int {
	if err := worker(os.Getenv(workerEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func worker(role string) error {
	ctx := context.Background()
	store, err := s3store.FromEnv()
	if err != nil {
		return err
	}
	defer store.Close(ctx)
	ext := spill.New(spill.WithStore(store))
	path := os.Getenv(workerSession)
	switch role {
	case "spill":
		data, _ := logText(workerData)
		p := harnesstest.NewScriptedProvider(harnesstest.CallTool("c1", "export_logs", map[string]any{}), harnesstest.Reply("stored"))
		a, err := harness.New(harness.WithProvider(p), harness.WithTools(bigTool("export_logs", string(data))), harness.WithExtensions(ext))
		if err != nil {
			return err
		}
		defer a.Close(ctx)
		if _, err := a.Run(ctx, "export the logs"); err != nil {
			return err
		}
		res := ext.Results()
		if len(res) != 1 {
			return fmt.Errorf("%d results spilled", len(res))
		}
		saved, err := a.SaveSession(ctx)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, saved, 0o600); err != nil {
			return err
		}
		fmt.Println(res[0].ID)
		return nil
	case "read":
		saved, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		id := os.Getenv(workerID)
		p := harnesstest.NewScriptedProvider(
			harnesstest.CallTool("r1", spill.ToolName, map[string]any{"id": id, "op": "search", "pattern": "zanzibar", "max_matches": 100}),
			harnesstest.CallTool("r2", spill.ToolName, map[string]any{"id": id, "op": "slice", "unit": "bytes", "offset": 2_000_000, "limit": 500}),
			harnesstest.Reply("read"))
		a, err := harness.LoadSession(ctx, saved, harness.WithProvider(p), harness.WithExtensions(ext))
		if err != nil {
			return err
		}
		defer a.Close(ctx)
		res, err := a.Run(ctx, "read the result")
		if err != nil {
			return err
		}
		var out []string
		for _, r := range toolResults(res.Messages) {
			if r.IsError {
				return fmt.Errorf("read_result failed: %s", r.Content)
			}
			out = append(out, r.Content)
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	return fmt.Errorf("unknown role %q", role)
}

// TestTwoWorkers: one process spills a result into the bucket and saves
// its session; another, with its own temporary directory, loads the
// session and answers read_result for the result by id from the bucket.
func TestTwoWorkers(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	session := filepath.Join(t.TempDir(), "session.json")
	run := func(role string, extra ...string) []byte {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), g.Env(bucket, "workers")...)
		cmd.Env = append(cmd.Env, workerEnv+"="+role, workerSession+"="+session, "TMPDIR="+t.TempDir())
		cmd.Env = append(cmd.Env, extra...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("worker %s: %v\n%s", role, err, stderr.String())
		}
		return out
	}
	id := strings.TrimSpace(string(run("spill")))
	if !spill.ValidID(id) {
		t.Fatalf("spill worker printed %q", id)
	}
	if keys := objects(t, g, bucket, "workers/ids/"); len(keys) != 1 || !strings.HasSuffix(keys[0], id) {
		t.Fatalf("index objects %v, want one for %s", keys, id)
	}
	var replies []string
	if err := json.Unmarshal(run("read", workerID+"="+id), &replies); err != nil || len(replies) != 2 {
		t.Fatalf("read worker replies %v: %v", replies, err)
	}
	data, rare := logText(workerData)
	if want := fmt.Sprintf("%d matching lines", rare); !strings.Contains(replies[0], want) {
		t.Errorf("search reply lacks %q:\n%.600s", want, replies[0])
	}
	if !strings.Contains(replies[0], "zanzibar hub") {
		t.Errorf("search reply shows no match:\n%.600s", replies[0])
	}
	if want := string(data[2_000_000:2_000_500]); !strings.Contains(replies[1], want) {
		t.Errorf("slice reply does not hold bytes 2000000..2000500:\n%.900s", replies[1])
	}
}
