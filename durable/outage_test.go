package durable

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
)

// pgServer is a Postgres server of the test's own (.ci/postgres.sh in a
// directory of its own), which the test may stop and start again.
type pgServer struct {
	dir, dsn, port string
}

// ownPostgres starts a server for the test alone, or skips (fails in CI)
// when it cannot: it needs Debian's postgresql and root (the server runs
// as the postgres user).
func ownPostgres(t *testing.T) *pgServer {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Getuid() != 0 {
		skip("a Postgres server of the test's own needs root (it runs as the postgres user)")
	}
	script, err := filepath.Abs("../.ci/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Its parents must be readable by the postgres user.
	dir, err := os.MkdirTemp("", "hx-pg-outage-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &pgServer{dir: filepath.Join(dir, "pg")}
	t.Cleanup(func() {
		cmd := exec.Command(script, "stop")
		cmd.Env = append(os.Environ(), "HARNESSX_PG_DIR="+s.dir)
		_ = cmd.Run()
		os.RemoveAll(dir)
	})
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), "HARNESSX_PG_DIR="+s.dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		skip("start a Postgres server: %v\n%s", err, stderr.String())
	}
	s.dsn = strings.TrimSpace(string(out))
	u, err := url.Parse(s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.port = u.Port()
	return s
}

func (s *pgServer) pgctl(t *testing.T, args ...string) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("pg_ctl not found")
	}
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", bins[len(bins)-1], "-D", filepath.Join(s.dir, "data")}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

func (s *pgServer) stop(t *testing.T) { s.pgctl(t, "-m", "fast", "-w", "stop") }

func (s *pgServer) start(t *testing.T) {
	s.pgctl(t, "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "60",
		"-o", "-c listen_addresses=127.0.0.1 -p "+s.port+" -c unix_socket_directories="+s.dir+" -c max_connections=200", "start")
}

// TestPostgresOutageMidRun: the database stops for 15 s while a run is in
// the middle of a tool call. The run completes once it is back, and
// neither Run in the process that executes it nor Wait in another
// process reports it failed meanwhile.
func TestPostgresOutageMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a Postgres server for 15 s")
	}
	pg := ownPostgres(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dsn"), []byte(pg.dsn), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt := openFixture(t, dir, true)
	client := openFixture(t, dir, false, WithExecutorID("client"))
	ran := async(func() (*harness.RunResult, error) { return rt.Run(ctx, "stall", "go", WithRunID("o1")) })
	for inFlight(t, dir)[DefaultExecutorID] == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	waited := async(func() (*harness.RunResult, error) { return client.Wait(ctx, "o1") })
	time.Sleep(200 * time.Millisecond) // the waiter is waiting
	pg.stop(t)
	stopped := time.Now()
	select {
	case r := <-ran:
		t.Fatalf("Run returned while the database was down: %+v %v", r.res, r.err)
	case r := <-waited:
		t.Fatalf("Wait returned while the database was down: %+v %v", r.res, r.err)
	case <-time.After(15 * time.Second):
	}
	pg.start(t)
	t.Logf("the database was down for %v", time.Since(stopped).Round(time.Second))
	for _, ch := range []<-chan runResult{ran, waited} {
		select {
		case r := <-ch:
			if r.err != nil || r.res.Status != harness.StatusCompleted || r.res.Text != "done: c1=stall-ok[ok] c2=stall-ok[ok]" && r.res.Text != "done: c2=stall-ok[ok]" {
				t.Fatalf("after the outage: %+v %v", r.res, r.err)
			}
		case <-ctx.Done():
			t.Fatal("the run did not finish after the database came back")
		}
	}
	if c := counts(t, dir); c["tool stall o1/tool/1/c1"] != 1 || c["tool stall o1/tool/2/c2"] != 1 {
		t.Fatalf("counters %v", c)
	}
}
