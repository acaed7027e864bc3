package durable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

func testKey(id string) PayloadKey {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return PayloadKey{ID: id, Key: k}
}

// secrets are the values a sealing test plants, one per place a payload
// goes; each is unique to the test.
type secrets struct {
	prompt, arg, result, answer, provider, storage string
}

func newSecrets() secrets {
	var b [6]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	return secrets{prompt: "PROMPT" + tag, arg: "TOOLARG" + tag, result: "TOOLRES" + tag,
		answer: "ANSWER" + tag, provider: "PROVERR" + tag, storage: "STORED" + tag}
}

func (s secrets) all() []string {
	return []string{s.prompt, s.arg, s.result, s.answer, s.provider, s.storage}
}

// leakFactory is an agent that carries every secret: the model calls the
// tool "leak" with s.arg, which asks the user (the test answers s.answer)
// and returns s.result with the answer; the model's second request fails
// with an error that quotes s.provider.
func leakFactory(s secrets) Factory {
	return func(ctx context.Context) ([]harness.Option, error) {
		provider := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			if req.Step == 1 {
				return callMsg(harnesstest.Call("c1", "leak", map[string]any{"q": s.arg})), nil
			}
			return nil, fmt.Errorf("provider: 400 bad request: %s", s.provider)
		})
		type in struct {
			Q string `json:"q"`
		}
		leak := harness.MustTool(harness.NewTool("leak", "leak", func(ctx context.Context, x in) (string, error) {
			a, err := harness.AskUser(ctx, harness.AskRequest{ID: "q1", Kind: harness.AskInput, Prompt: "say"})
			if err != nil {
				return "", err
			}
			return s.result + " " + a.Text, nil
		}))
		leak.ReplayPolicy = harness.ReplaySafe // a tool that asks
		return []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1"), harness.WithTools(leak)}, nil
	}
}

// runLeak runs the leak agent as runID on rt to its end, answering its
// question, and stores s.storage; it returns the run's result and error.
func runLeak(t *testing.T, rt *Runtime, s secrets, runID string) (*harness.RunResult, error) {
	t.Helper()
	ctx := ctxT(t)
	if err := rt.Storage().Put(ctx, harness.StorageScope{Namespace: "leak", Session: "s"}, "k", []byte(`{"v":"`+s.storage+`"}`)); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Submit(ctx, "leak", "please keep "+s.prompt, WithRunID(runID))
	if err != nil {
		t.Fatal(err)
	}
	replyWhenAsked(t, rt, id, "q1", s.answer)
	return rt.Wait(ctx, id)
}

// replyWhenAsked waits for the run's question and answers it.
func replyWhenAsked(t *testing.T, rt *Runtime, runID, askID, text string) {
	t.Helper()
	ctx := ctxT(t)
	for {
		err := rt.Reply(ctx, runID, askID, harness.Answer{Text: text})
		if err == nil {
			return
		}
		if st, _, _ := rt.state(rt.dctx, runID); st != nil {
			t.Fatalf("run %s ended before its question: %+v", runID, st)
		}
		if !errors.Is(err, ErrUnknownAsk) {
			t.Fatalf("reply: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no question %s in run %s", askID, runID)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// forms are the ways a secret may be stored: as it is, and in the three
// alignments of base64 (DBOS's JSON payloads are base64).
func forms(secret string) []string {
	out := []string{secret}
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + secret))
		// Keep the characters that depend on the secret alone.
		skip := map[int]int{0: 0, 1: 2, 2: 3}[pad]
		enc = strings.TrimRight(enc, "=")
		out = append(out, enc[skip:len(enc)-2])
	}
	return out
}

// found lists the secrets that appear in data, in any form.
func found(data []byte, s secrets) []string {
	var hits []string
	for _, sec := range s.all() {
		for _, f := range forms(sec) {
			if bytes.Contains(data, []byte(f)) {
				hits = append(hits, sec)
				break
			}
		}
	}
	return hits
}

// rawDatabase returns what a reader of the database without the key
// sees: the SQLite file, its WAL and shared memory, byte for byte; or a
// pg_dump of the Postgres database.
func rawDatabase(t *testing.T, dir string) []byte {
	t.Helper()
	dsn := fixtureDSN(dir)
	if path, ok := sqlitePath(dsn); ok {
		var all []byte
		for _, suffix := range []string{"", "-wal", "-shm"} {
			data, err := os.ReadFile(path + suffix)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, data...)
		}
		if len(all) == 0 {
			t.Fatal("no database file")
		}
		return all
	}
	out, err := exec.Command("pg_dump", "--no-owner", "--dbname="+dsn).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pg_dump: %v: %s", err, stderr)
	}
	if !bytes.Contains(out, []byte("workflow_status")) {
		t.Fatalf("pg_dump holds no workflow_status:\n%.2000s", out)
	}
	return out
}

func openLeak(t *testing.T, dir string, s secrets, opts ...Option) *Runtime {
	t.Helper()
	rt, err := Open(context.Background(), fixtureDSN(dir), append([]Option{WithLogger(quietLogger()), WithPollInterval(20 * time.Millisecond), WithRetention(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Register("leak", leakFactory(s)); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestAtRestSealed plants a secret in each place a payload goes (the
// prompt, a tool's argument, its result, an answer, a provider's error,
// an extension storage value) and reads the database as someone without
// the key would: the SQLite file with its WAL, or a pg_dump. With a key
// none is there; without one each is (so that the test can fail).
func TestAtRestSealed(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	eachBackend(t, func(t *testing.T, dir string) {
		for _, sealed := range []bool{false, true} {
			t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
				sub := filepath.Join(dir, fmt.Sprint(sealed))
				if err := os.MkdirAll(sub, 0o700); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, "dsn")); err == nil { // one Postgres database per case
					useBackend(t, sub, "postgres")
				}
				s := newSecrets()
				var opts []Option
				if sealed {
					opts = append(opts, WithPayloadKey(testKey("k1")))
				}
				rt := openLeak(t, sub, s, opts...)
				res, err := runLeak(t, rt, s, "leak-1")
				if err == nil || !strings.Contains(err.Error(), s.provider) {
					t.Fatalf("the run's error does not quote the provider's: %v", err)
				}
				if res.Status != harness.StatusFailed {
					t.Fatalf("status %s, want failed", res.Status)
				}
				// The run read back from the database.
				if res, err := rt.Wait(ctxT(t), "leak-1"); err == nil || !strings.Contains(err.Error(), s.provider) || !strings.Contains(msgsText(res.Messages), s.result+" "+s.answer) {
					t.Fatalf("Wait: %v %+v", err, res)
				}
				v, ok, err := rt.Storage().Get(ctxT(t), harness.StorageScope{Namespace: "leak", Session: "s"}, "k")
				if err != nil || !ok || !strings.Contains(string(v), s.storage) {
					t.Fatalf("storage: %s %v %v", v, ok, err)
				}
				if err := rt.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				hits := found(rawDatabase(t, sub), s)
				if sealed && len(hits) > 0 {
					t.Fatalf("sealed, the database holds %q", hits)
				}
				if !sealed && len(hits) != len(s.all()) {
					t.Fatalf("without a key the test finds only %q of %q: it cannot tell a leak", hits, s.all())
				}
			})
		}
	})
}

// TestAtRestWrongKey: a run parked on a question under key k1; a runtime
// with another key, or none, is refused at Open with ErrPayloadKey naming
// k1, and changes nothing; a runtime with k1 completes the run. Then the
// key rotates: k2 seals, k1 still opens.
func TestAtRestWrongKey(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	eachBackend(t, func(t *testing.T, dir string) {
		s := newSecrets()
		k1, k2 := testKey("k1"), testKey("k2")
		rt := openLeak(t, dir, s, WithPayloadKey(k1))
		id, err := rt.Submit(ctxT(t), "leak", "please keep "+s.prompt, WithRunID("parked"))
		if err != nil {
			t.Fatal(err)
		}
		waitAsk(t, rt, id, nil, nil)
		rt.Close(context.Background())

		for name, opts := range map[string][]Option{
			"other key": {WithPayloadKey(testKey("k9"))},
			"same id":   {WithPayloadKey(PayloadKey{ID: "k1", Key: testKey("x").Key})},
			"no key":    nil,
		} {
			rt, err := Open(ctxT(t), fixtureDSN(dir), append([]Option{WithLogger(quietLogger())}, opts...)...)
			if name == "same id" {
				// The ID matches: Open cannot tell; reading a payload can.
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				_, err = rt.Pending(ctxT(t))
				rt.Close(context.Background())
				if !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), `"k1"`) {
					t.Fatalf("%s: Pending: %v", name, err)
				}
				continue
			}
			if err == nil {
				rt.Close(context.Background())
				t.Fatalf("%s: Open accepted the database", name)
			}
			if !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), `"k1"`) {
				t.Fatalf("%s: %v", name, err)
			}
		}

		// Rotation: k2 seals from now on, k1 opens the parked run.
		rt = openLeak(t, dir, s, WithPayloadKey(k2, k1))
		defer rt.Close(context.Background())
		replyWhenAsked(t, rt, id, "q1", s.answer)
		res, err := rt.Wait(ctxT(t), id)
		if err == nil || !strings.Contains(err.Error(), s.provider) || !strings.Contains(msgsText(res.Messages), s.result+" "+s.answer) {
			t.Fatalf("the parked run after the right key: %v %+v", err, res)
		}
		if got := sealedKeyIDs(t, dir); !got["k1"] || !got["k2"] {
			t.Fatalf("key ids in the database %v, want k1 (before the rotation) and k2 (after)", got)
		}
		// k2 alone no longer opens what k1 sealed.
		rt.Close(context.Background())
		if _, err := Open(ctxT(t), fixtureDSN(dir), WithLogger(quietLogger()), WithPayloadKey(k2)); !errors.Is(err, ErrPayloadKey) {
			t.Fatalf("k2 alone: %v", err)
		}
	})
}

// sealedKeyIDs lists the key IDs of the sealed payloads of the runs'
// steps, read with plain SQL.
func sealedKeyIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	table := "operation_outputs"
	if db.postgres {
		table = "dbos.operation_outputs"
	}
	rows, err := db.db.QueryContext(ctxT(t), `SELECT output FROM `+table+` WHERE output IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if rest, ok := strings.CutPrefix(v, sealPrefix); ok && v != sealedNil {
			id, _, _ := strings.Cut(rest, ":")
			ids[id] = true
		}
	}
	return ids
}

// TestAtRestOldRowsRead: runs recorded without a key (DBOS's JSON) read
// under a key; a key is refused while a run recorded without one has not
// finished, and accepted once it has.
func TestAtRestOldRowsRead(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	dir := t.TempDir()
	s := newSecrets()
	rt := openLeak(t, dir, s)
	if _, err := runLeak(t, rt, s, "old-done"); err == nil {
		t.Fatal("the leak run succeeded")
	}
	id, err := rt.Submit(ctxT(t), "leak", "x", WithRunID("old-parked"))
	if err != nil {
		t.Fatal(err)
	}
	waitAsk(t, rt, id, nil, nil)
	rt.Close(context.Background())

	k1 := testKey("k1")
	if _, err := Open(ctxT(t), fixtureDSN(dir), WithLogger(quietLogger()), WithPayloadKey(k1)); !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), "old-parked") {
		t.Fatalf("a key while a run without one is parked: %v", err)
	}
	rt = openLeak(t, dir, s)
	replyWhenAsked(t, rt, id, "q1", s.answer)
	if _, err := rt.Wait(ctxT(t), id); err == nil {
		t.Fatal("the leak run succeeded")
	}
	rt.Close(context.Background())

	rt = openLeak(t, dir, s, WithPayloadKey(k1))
	defer rt.Close(context.Background())
	for _, id := range []string{"old-done", "old-parked"} {
		res, err := rt.Wait(ctxT(t), id)
		if err == nil || !strings.Contains(err.Error(), s.provider) || res.Status != harness.StatusFailed || !strings.Contains(msgsText(res.Messages), s.result) {
			t.Fatalf("old run %s: %v %+v", id, err, res)
		}
	}
	v, ok, err := rt.Storage().Get(ctxT(t), harness.StorageScope{Namespace: "leak", Session: "s"}, "k")
	if err != nil || !ok || !strings.Contains(string(v), s.storage) {
		t.Fatalf("old storage value: %s %v %v", v, ok, err)
	}
	// And new runs are sealed.
	s2 := newSecrets()
	rt.Close(context.Background())
	rt = openLeak(t, dir, s2, WithPayloadKey(k1))
	defer rt.Close(context.Background())
	if _, err := runLeak(t, rt, s2, "new"); err == nil {
		t.Fatal("the leak run succeeded")
	}
	rt.Close(context.Background())
	if hits := found(rawDatabase(t, dir), s2); len(hits) > 0 {
		t.Fatalf("a new run under the key leaked %q", hits)
	}
}

func TestAtRestParsePayloadKeys(t *testing.T) {
	k := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	keys, err := ParsePayloadKeys(" new:" + k + " , old:" + strings.TrimRight(k, "="))
	if err != nil || len(keys) != 2 || keys[0].ID != "new" || keys[1].ID != "old" || !bytes.Equal(keys[1].Key, bytes.Repeat([]byte{7}, 32)) {
		t.Fatalf("%+v %v", keys, err)
	}
	for _, bad := range []string{"nokey", "k:" + k[:20], "bad id:" + k, "k:!!!", "a:" + k + ",a:" + k, ""} {
		_, err := ParsePayloadKeys(bad)
		if err == nil {
			_, err = newSealer(mustParse(bad))
		}
		if !errors.Is(err, ErrInvalidPayloadKey) {
			t.Errorf("%q: %v", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), k[:20]) {
			t.Errorf("%q: the error quotes the key: %v", bad, err)
		}
	}
	t.Setenv(EnvPayloadKey, "k1:short")
	if _, err := Open(ctxT(t), "sqlite:"+filepath.Join(t.TempDir(), "runs.db")); !errors.Is(err, ErrInvalidPayloadKey) || !strings.Contains(err.Error(), EnvPayloadKey) {
		t.Fatalf("a bad %s: %v", EnvPayloadKey, err)
	}
	t.Setenv(EnvPayloadKey, "envkey:"+k)
	dir := t.TempDir()
	rt, err := Open(ctxT(t), "sqlite:"+filepath.Join(dir, "runs.db"), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(context.Background())
	t.Setenv(EnvPayloadKey, "")
	if _, err := Open(ctxT(t), "sqlite:"+filepath.Join(dir, "runs.db"), WithLogger(quietLogger())); !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), `"envkey"`) {
		t.Fatalf("the key of %s was not used: %v", EnvPayloadKey, err)
	}
}

func mustParse(spec string) []PayloadKey {
	keys, _ := ParsePayloadKeys(spec)
	return keys
}

// TestAtRestModelErrorReplays: with a key, a failed model step's error is
// recorded in its sealed output, and a re-execution of the run replays
// the same error text without asking the provider again.
func TestAtRestModelErrorReplays(t *testing.T) {
	dir := t.TempDir()
	var calls int
	var mu sync.Mutex
	f := func(ctx context.Context) ([]harness.Option, error) {
		provider := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			return nil, errors.New("provider: overloaded, key sk-ant-api03-" + strings.Repeat("Q", 40))
		})
		return []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1")}, nil
	}
	open := func() *Runtime {
		rt, err := Open(ctxT(t), "sqlite:"+filepath.Join(dir, "runs.db"), WithLogger(quietLogger()), WithPayloadKey(PayloadKey{ID: "k1", Key: bytes.Repeat([]byte{1}, 32)}))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Register("m", f); err != nil {
			t.Fatal(err)
		}
		if err := rt.Launch(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt := open()
	_, err1 := rt.Run(ctxT(t), "m", "go", WithRunID("m1"))
	if err1 == nil {
		t.Fatal("no error")
	}
	// Make the run pending again, as a crash after its step would leave
	// it, and let a new process re-execute it.
	rt.Close(context.Background())
	db, err := openLeaseDB(ctxT(t), "sqlite:"+filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.Exec(`UPDATE workflow_status SET status = 'PENDING', output = NULL, error = NULL WHERE workflow_uuid = 'm1'`); err != nil {
		t.Fatal(err)
	}
	var stepErr *string
	if err := db.db.QueryRow(`SELECT error FROM operation_outputs WHERE workflow_uuid = 'm1'`).Scan(&stepErr); err != nil {
		t.Fatal(err)
	}
	db.close()
	if stepErr != nil {
		t.Fatalf("the model step recorded an error in plain text: %q", *stepErr)
	}
	rt = open()
	defer rt.Close(context.Background())
	_, err2 := rt.Wait(ctxT(t), "m1")
	if err2 == nil || err2.Error() != err1.Error() {
		t.Fatalf("replayed error %v, first %v", err2, err1)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("the provider was asked %d times", calls)
	}
}

// captured is a slog handler that keeps the records it gets.
type captured struct {
	mu   *sync.Mutex
	recs *[]string
	lvls *[]slog.Level
}

func newCaptured() captured { return captured{&sync.Mutex{}, &[]string{}, &[]slog.Level{}} }

func (c captured) Enabled(context.Context, slog.Level) bool { return true }
func (c captured) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "level=%s msg=%q", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	})
	c.mu.Lock()
	*c.recs = append(*c.recs, b.String())
	*c.lvls = append(*c.lvls, r.Level)
	c.mu.Unlock()
	return nil
}
func (c captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c captured) WithGroup(string) slog.Handler      { return c }

func (c captured) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), *c.recs...)
}

// TestAtRestLogsRedacted: DBOS logs a failed step's error (a provider's
// error quoting an API key) through the runtime's logger; the key is
// redacted.
func TestAtRestLogsRedacted(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	apiKey := "sk-ant-api03-" + strings.Repeat("Z", 40)
	c := newCaptured()
	rt, err := Open(ctxT(t), "sqlite:"+filepath.Join(t.TempDir(), "runs.db"), WithLogger(slog.New(c)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	rt.Register("m", func(ctx context.Context) ([]harness.Option, error) {
		provider := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			return nil, errors.New("provider: 401 invalid x-api-key " + apiKey)
		})
		return []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1")}, nil
	})
	if err := rt.Launch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(ctxT(t), "m", "go"); err == nil || !strings.Contains(err.Error(), apiKey) {
		t.Fatalf("the run's own error is the provider's: %v", err)
	}
	logged := strings.Join(c.lines(), "\n")
	if strings.Contains(logged, apiKey) {
		t.Fatalf("DBOS logged the key:\n%s", logged)
	}
	if !strings.Contains(logged, "[REDACTED:anthropic-key]") {
		t.Fatalf("DBOS logged no redacted error (the test does not see DBOS's log):\n%s", logged)
	}
}

func msgsText(ms []harness.Message) string {
	data, _ := json.Marshal(ms)
	return string(data)
}

// TestAtRestSealedTables: the runtime's own tables hold sealed snapshots
// and storage values, each bound to its row: a value moved to another
// row, or read with another key, does not open; a plain value (written
// without a key) reads.
func TestAtRestSealedTables(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	ctx := ctxT(t)
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "runs.db")
	k1 := testKey("k1")
	rt, err := Open(ctx, dsn, WithLogger(quietLogger()), WithPayloadKey(k1))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	db, err := rt.auxDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := []byte(`{"tally":{"n":"SNAPSECRET"}}`)
	if err := db.saveSnapshot(ctx, "run-a", "k", 1, state); err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := db.db.QueryRowContext(ctx, db.q(`SELECT state FROM {P} WHERE run_id = 'run-a'`)).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, "hx1:k1:snapshot:") || strings.Contains(raw, "SNAPSECRET") {
		t.Fatalf("stored snapshot %q", raw)
	}
	if got, err := db.loadSnapshot(ctx, "run-a"); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("loadSnapshot: %s %v", got, err)
	}
	// Moved to another run's row: refused.
	if _, err := db.db.ExecContext(ctx, db.q(`INSERT INTO {P} (run_id, step_key, state) VALUES ('run-b', 'k', $1)`), raw); err != nil {
		t.Fatal(err)
	}
	if _, err := db.loadSnapshot(ctx, "run-b"); !errors.Is(err, ErrPayloadKey) {
		t.Fatalf("a snapshot moved to another run: %v", err)
	}
	// Another key under another ID, no key: refused, naming k1.
	for _, s := range []*sealer{mustSealer(t, testKey("k2")), nil} {
		db.seal = s
		if _, err := db.loadSnapshot(ctx, "run-a"); !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), `"k1"`) {
			t.Fatalf("snapshot with the wrong key: %v", err)
		}
	}
	// A plain snapshot reads under a key.
	db.seal = nil
	if err := db.saveSnapshot(ctx, "run-c", "k", 1, state); err != nil {
		t.Fatal(err)
	}
	db.seal = mustSealer(t, k1)
	if got, err := db.loadSnapshot(ctx, "run-c"); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("plain snapshot under a key: %s %v", got, err)
	}
	// Storage: sealed, bound to its key.
	st := rt.Storage()
	sc := harness.StorageScope{Namespace: "ns", Session: "s"}
	if err := st.Put(ctx, sc, "a", []byte(`"STORESECRET"`)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.Get(ctx, sc, "a"); err != nil || !ok || string(v) != `"STORESECRET"` {
		t.Fatalf("Get: %s %v %v", v, ok, err)
	}
	aux := db
	if err := aux.db.QueryRowContext(ctx, aux.q(`SELECT value FROM {KV} WHERE key = 'a'`)).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw, "hx1:k1:storage:") || strings.Contains(raw, "STORESECRET") {
		t.Fatalf("stored value %q", raw)
	}
	if _, err := aux.db.ExecContext(ctx, aux.q(`INSERT INTO {KV} (namespace, session, key, value) VALUES ('ns', 's', 'b', $1)`), raw); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, sc, "b"); !errors.Is(err, ErrPayloadKey) {
		t.Fatalf("a value moved to another key: %v", err)
	}
}

func mustSealer(t *testing.T, keys ...PayloadKey) *sealer {
	t.Helper()
	s, err := newSealer(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAtRestRetireKey: an old key ID retires only once nothing is sealed
// with it; then a runtime without that key opens the database.
func TestAtRestRetireKey(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // "no key" means none: not the one the suite may run under
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		s := newSecrets()
		k1, k2 := testKey("k1"), testKey("k2")
		rt := openLeak(t, dir, s, WithPayloadKey(k1))
		if _, err := runLeak(t, rt, s, "r1"); err == nil {
			t.Fatal("the leak run succeeded")
		}
		rt.Close(context.Background())

		rt = openLeak(t, dir, s, WithPayloadKey(k2, k1))
		defer rt.Close(context.Background())
		if err := rt.RetireKey(ctx, "k2"); !errors.Is(err, ErrPayloadKey) {
			t.Fatalf("retire the current key: %v", err)
		}
		err := rt.RetireKey(ctx, "k1")
		if !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), "operation_outputs") || !strings.Contains(err.Error(), "storage") {
			t.Fatalf("retire a key that still seals payloads: %v", err)
		}
		ws, err := dbos.ListWorkflows(rt.dctx, dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		if err := dbos.DeleteWorkflows(rt.dctx, ids); err != nil {
			t.Fatal(err)
		}
		if err := rt.RetireKey(ctx, "k1"); !errors.Is(err, ErrPayloadKey) || strings.Contains(err.Error(), "operation_outputs") {
			t.Fatalf("retire a key that seals only a storage value: %v", err)
		}
		if err := rt.Storage().Delete(ctx, harness.StorageScope{Namespace: "leak", Session: "s"}, "k"); err != nil {
			t.Fatal(err)
		}
		if err := rt.RetireKey(ctx, "k1"); err != nil {
			t.Fatalf("retire an unused key: %v", err)
		}
		rt.Close(context.Background())
		rt2, err := Open(ctx, fixtureDSN(dir), WithLogger(quietLogger()), WithPayloadKey(k2))
		if err != nil {
			t.Fatalf("k2 alone after k1 retired: %v", err)
		}
		rt2.Close(context.Background())
	})
}
