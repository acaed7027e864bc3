package durable

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// The fixture: agents whose fake provider answers by step number (so that
// a recovered run, which does not ask for recorded steps, gets the right
// answer) and whose tools count their calls in a file on disk. With
// HX_KILL=1 in the environment, the process SIGKILLs itself once (a marker
// file remembers it) at the scenario's kill point.

const (
	envChild = "HX_DURABLE_CHILD" // child mode: run | pause
	envDir   = "HX_DURABLE_DIR"
	envKill  = "HX_KILL"
	envRun   = "HX_RUN"
	envAgent = "HX_AGENT"
	envExec  = "HX_EXECUTOR" // worker mode: the executor ID
)

// executor is the process's executor ID in the counters ("local" but in
// a worker child).
func executor() string {
	if e := os.Getenv(envExec); e != "" {
		return e
	}
	return DefaultExecutorID
}

// count appends a line to dir/counters.
func count(dir, line string) {
	f, err := os.OpenFile(filepath.Join(dir, "counters"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintln(f, line)
	f.Close()
}

// counts reads dir/counters.
func counts(t testing.TB, dir string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "counters"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string]int{}
	for l := range strings.Lines(string(data)) {
		m[strings.TrimSpace(l)]++
	}
	return m
}

// killOnce SIGKILLs the process the first time it is called at point, when
// HX_KILL=1.
func killOnce(dir, point string) {
	if os.Getenv(envKill) != "1" {
		return
	}
	marker := filepath.Join(dir, "killed-"+point)
	if _, err := os.Stat(marker); err == nil {
		return
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		panic(err)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Hour)
}

// askWhich asks the user to choose red or blue and says what was chosen;
// answered, it calls then (when not nil) first.
func askWhich(ctx context.Context, then func()) (string, error) {
	a, err := harness.AskUser(ctx, harness.AskRequest{Kind: harness.AskSelect, Prompt: "which?", Options: []string{"red", "blue"}})
	if err != nil {
		return "", err
	}
	if then != nil {
		then()
	}
	return "chose " + a.Choice, nil
}

func callMsg(calls ...harness.ToolCall) *harness.ModelResponse {
	m := harness.Message{Role: harness.RoleAssistant}
	for i := range calls {
		m.Content = append(m.Content, harness.Part{Type: harness.PartToolCall, ToolCall: &calls[i]})
	}
	return &harness.ModelResponse{Message: m, StopReason: harness.StopToolUse, Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}, Provider: "fake", Model: "fake-1"}
}

func reply(text string) *harness.ModelResponse {
	return &harness.ModelResponse{Message: harness.AssistantMessage(text), StopReason: harness.StopEndTurn, Usage: harness.Usage{InputTokens: 20, OutputTokens: 3}, Provider: "fake", Model: "fake-1"}
}

// results renders the tool results of the last message.
func results(req *harness.ModelRequest) string {
	var out []string
	last := req.Messages[len(req.Messages)-1]
	for _, p := range last.Content {
		if p.ToolResult != nil {
			out = append(out, fmt.Sprintf("%s=%s[%s]", p.ToolResult.CallID, p.ToolResult.Content, p.ToolResult.Status))
		}
	}
	return strings.Join(out, " ")
}

// agents are the fixture's agent names.
var agents = []string{"safe", "unsafe", "model", "par", "approve", "ask", "parask", "work", "spill", "stall", "image", "smallimage"}

func factory(dir, agent string) Factory {
	return func(ctx context.Context) ([]harness.Option, error) {
		provider := harness.ProviderFunc(func(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
			count(dir, fmt.Sprintf("model %d", req.Step))
			count(dir, "by "+executor()+" "+harness.ExecutionKey(ctx))
			if req.Step == 1 {
				switch agent {
				case "safe", "unsafe", "model":
					tool := map[string]string{"safe": "safe", "unsafe": "unsafe", "model": "fast"}[agent]
					return callMsg(harnesstest.Call("c1", tool, map[string]any{})), nil
				case "par":
					return callMsg(harnesstest.Call("p1", "fast", map[string]any{}), harnesstest.Call("p2", "fast", map[string]any{}),
						harnesstest.Call("p3", "slow", map[string]any{})), nil
				case "approve":
					return callMsg(harnesstest.Call("c1", "guarded", map[string]any{})), nil
				case "ask":
					return callMsg(harnesstest.Call("c1", "asker", map[string]any{})), nil
				case "parask": // a parallel group in which one call asks
					return callMsg(harnesstest.Call("p1", "fast", map[string]any{}), harnesstest.Call("p2", "askpar", map[string]any{}),
						harnesstest.Call("p3", "slowask", map[string]any{})), nil
				case "work":
					return callMsg(harnesstest.Call("c1", "work", map[string]any{})), nil
				case "spill":
					return callMsg(harnesstest.Call("c1", "big", map[string]any{})), nil
				case "stall":
					return callMsg(harnesstest.Call("c1", "stall", map[string]any{})), nil
				case "image": // an image of the model's own, and a call of a tool that returns one
					resp := callMsg(harnesstest.Call("c1", "snap", map[string]any{}))
					resp.Message.Content = append([]harness.Part{harness.ImagePart(modelImage(), "image/png")}, resp.Message.Content...)
					return resp, nil
				case "smallimage":
					return callMsg(harnesstest.Call("c1", "snaps", map[string]any{})), nil
				}
			}
			if agent == "image" || agent == "smallimage" {
				// What the request carries: each media part's hash, in order.
				for i, m := range req.Messages {
					for _, p := range m.Content {
						parts := []harness.Part{p}
						if p.ToolResult != nil {
							parts = p.ToolResult.Parts
						}
						for _, q := range parts {
							if q.Media != nil {
								sum := q.Media.SHA256()
								count(dir, fmt.Sprintf("media %d %s %s %d", i, q.MIME(), hex.EncodeToString(sum[:]), len(q.Media.Data)))
							}
						}
					}
				}
				killOnce(dir, agent)
			}
			if agent == "stall" && req.Step == 2 {
				return callMsg(harnesstest.Call("c2", "stall", map[string]any{})), nil
			}
			if agent == "spill" {
				switch req.Step {
				case 2:
					return callMsg(harnesstest.Call("c2", "bomb", map[string]any{})), nil
				case 3: // read the result that step 1 spilled, by its id
					id := spilledID(req.Messages)
					return callMsg(harnesstest.Call("c3", spill.ToolName, map[string]any{"id": id, "op": "search", "pattern": "needle"})), nil
				}
			}
			if agent == "model" {
				killOnce(dir, "model")
			}
			return reply("done: " + results(req)), nil
		})
		type in struct{}
		tool := func(name string, policy harness.ReplayPolicy, conc bool, body func(ctx context.Context) (string, error)) *harness.Tool {
			t := harness.MustTool(harness.NewTool(name, name, func(ctx context.Context, _ in) (string, error) {
				count(dir, "tool "+name+" "+harness.ExecutionKey(ctx))
				return body(ctx)
			}))
			t.ReplayPolicy, t.Concurrent = policy, conc
			return t
		}
		guarded := tool("guarded", harness.ReplayUnsafe, false, func(context.Context) (string, error) { return "deployed", nil })
		guarded.Permission = harness.PermissionAsk
		tools := []*harness.Tool{
			tool("safe", harness.ReplaySafe, false, func(ctx context.Context) (string, error) {
				count(dir, "now "+harness.ExecutionKey(ctx)+" "+harness.Now(ctx).Format(time.RFC3339Nano))
				killOnce(dir, "safe")
				return "safe-ok", nil
			}),
			tool("unsafe", harness.ReplayUnsafe, false, func(context.Context) (string, error) {
				killOnce(dir, "unsafe")
				return "unsafe-ok", nil
			}),
			tool("fast", harness.ReplaySafe, true, func(ctx context.Context) (string, error) {
				return "fast-ok", nil
			}),
			tool("slow", harness.ReplayUnsafe, true, func(ctx context.Context) (string, error) {
				if os.Getenv(envKill) == "1" {
					time.Sleep(500 * time.Millisecond) // p1 and p2 are recorded by then
				}
				killOnce(dir, "slow")
				return "slow-ok", nil
			}),
			guarded,
			tool("work", harness.ReplaySafe, false, func(ctx context.Context) (string, error) {
				// "in" and "out" lines around a short wait: the test reads
				// each worker's concurrency from their order.
				count(dir, "in "+executor()+" "+harness.ExecutionKey(ctx))
				time.Sleep(300 * time.Millisecond)
				count(dir, "out "+executor()+" "+harness.ExecutionKey(ctx))
				return "work-ok", nil
			}),
			tool("big", harness.ReplaySafe, false, func(context.Context) (string, error) {
				var b strings.Builder
				for i := range 2000 {
					if i == 1500 {
						b.WriteString("needle-1500\n")
						continue
					}
					fmt.Fprintf(&b, "line %d\n", i)
				}
				return b.String(), nil
			}),
			tool("stall", harness.ReplayUnsafe, false, func(ctx context.Context) (string, error) {
				// Long enough for a SIGSTOP to land inside it.
				count(dir, "in "+executor()+" "+harness.ExecutionKey(ctx))
				time.Sleep(1500 * time.Millisecond)
				count(dir, "out "+executor()+" "+harness.ExecutionKey(ctx))
				return "stall-ok", nil
			}),
			tool("bomb", harness.ReplayUnsafe, false, func(context.Context) (string, error) {
				killOnce(dir, "bomb")
				return "bomb-ok", nil
			}),
			tool("askpar", harness.ReplaySafe, true, func(ctx context.Context) (string, error) { return askWhich(ctx, nil) }),
			tool("slowask", harness.ReplaySafe, true, func(ctx context.Context) (string, error) {
				if os.Getenv(envKill) == "1" {
					time.Sleep(800 * time.Millisecond) // p1 and p2 are recorded by then
				}
				killOnce(dir, "slowask")
				return "slow-ok", nil
			}),
			tool("asker", harness.ReplaySafe, false, func(ctx context.Context) (string, error) {
				return askWhich(ctx, func() { killOnce(dir, "asker") })
			}),
		}
		snap := harness.MustTool(harness.NewTool("snap", "snap", func(ctx context.Context, _ in) (harness.ToolOutput, error) {
			count(dir, "tool snap "+harness.ExecutionKey(ctx))
			return harness.ToolOutput{Text: "snapped", Parts: []harness.Part{harness.ImagePart(toolImage(), "image/png")}}, nil
		}))
		snaps := harness.MustTool(harness.NewTool("snaps", "snaps", func(ctx context.Context, _ in) (harness.ToolOutput, error) {
			count(dir, "tool snaps "+harness.ExecutionKey(ctx))
			img := toolImage()
			return harness.ToolOutput{Text: "snapped", Parts: []harness.Part{
				harness.ImagePart(img[:blobThreshold-1], "image/png"), harness.DocumentPart(img[1:blobThreshold+1], "application/pdf")}}, nil
		}))
		snap.ReplayPolicy, snaps.ReplayPolicy = harness.ReplayUnsafe, harness.ReplayUnsafe
		tools = append(tools, snap, snaps)
		// Each execution of a run says which attempt it is.
		starts := harness.WithHooks(func(_ context.Context, ev *harness.Event) error {
			count(dir, fmt.Sprintf("start %s attempt=%d recovered=%v", ev.RunID, ev.Attempt, ev.Recovered))
			return nil
		}, harness.EventRunStart)
		opts := []harness.Option{harness.WithProvider(provider), harness.WithModel("fake-1"), harness.WithTools(tools...), starts}
		if agent == "spill" {
			// The default temporary store, under dir: nothing but the
			// engine snapshot tells a recovered run where its results are.
			opts = append(opts, harness.WithExtensions(spill.New(spill.WithThreshold(1000), spill.WithTempParent(dir)), &tally{dir: dir}))
		}
		return opts, nil
	}
}

// spilledID finds the id in the envelope of call c1's result.
func spilledID(msgs []harness.Message) string {
	for _, m := range msgs {
		for _, p := range m.Content {
			if r := p.ToolResult; r != nil && r.CallID == "c1" {
				if m := regexp.MustCompile(`(?m)^id: (\S+)$`).FindStringSubmatch(r.Content); m != nil {
					return m[1]
				}
			}
		}
	}
	return "no-envelope"
}

// tally is an extension with state: it counts the tool calls that ended
// in its agent, saves the count and logs what it loads and ends with.
type tally struct {
	dir string
	mu  sync.Mutex
	n   int
}

func (e *tally) Name() string { return "tally" }

func (e *tally) Install(ec *harness.ExtensionContext) error {
	_, err := ec.OnHook(harness.EventToolCallEnd, func(context.Context, *harness.Event) error {
		e.mu.Lock()
		e.n++
		e.mu.Unlock()
		return nil
	})
	return err
}

func (e *tally) OnSaveSession(ctx context.Context, _ *harness.ExtensionContext) (any, error) {
	if !harness.IsSnapshot(ctx) {
		count(e.dir, "tally saved outside a snapshot")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return map[string]int{"n": e.n}, nil
}

func (e *tally) OnLoadSession(_ context.Context, _ *harness.ExtensionContext, raw json.RawMessage) error {
	var st struct{ N int }
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	e.mu.Lock()
	e.n = st.N
	e.mu.Unlock()
	count(e.dir, fmt.Sprintf("tally load n=%d", st.N))
	return nil
}

func (e *tally) OnTurnComplete(_ context.Context, _ *harness.ExtensionContext, _ *harness.RunResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	count(e.dir, fmt.Sprintf("tally end n=%d", e.n))
}

// countRows opens the runtime's tables of the fixture in dir and returns
// the result of a COUNT(*) query written with leaseDB.q's placeholders
// ({S} the steps table, {P} the snapshots table).
func countRows(t *testing.T, dir, query string) int {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	var n int
	if err := db.db.QueryRowContext(ctxT(t), db.q(query)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// openFixture opens a runtime on dir/runs.db with every fixture agent
// registered; launched unless told otherwise.
func openFixture(t testing.TB, dir string, launch bool, opts ...Option) *Runtime {
	t.Helper()
	rt, err := openRuntime(dir, launch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func openRuntime(dir string, launch bool, opts ...Option) (*Runtime, error) {
	ctx := context.Background()
	rt, err := Open(ctx, fixtureDSN(dir), append([]Option{WithLogger(quietLogger()), WithPollInterval(20 * time.Millisecond)}, opts...)...)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		if err := rt.Register(a, factory(dir, a)); err != nil {
			return nil, err
		}
	}
	if launch {
		if err := rt.Launch(ctx); err != nil {
			rt.Close(ctx)
			return nil, err
		}
	}
	return rt, nil
}

// child is the re-executed test binary: it runs HX_AGENT under HX_RUN and
// prints the result as JSON. A kill point on the way SIGKILLs it.
func child() int {
	dir := os.Getenv(envDir)
	rt, err := openRuntime(dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	res, err := rt.Run(context.Background(), os.Getenv(envAgent), "go", WithRunID(os.Getenv(envRun)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(toOutput(res))
	if os.Getenv(envChild) == "pause" && res.Status == harness.StatusPaused {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // die while paused
		time.Sleep(time.Hour)
	}
	rt.Close(context.Background())
	return 0
}

// runChild runs the test binary as a child in mode and returns its stdout
// and whether it died of SIGKILL.
func runChild(t *testing.T, dir, mode, agent, runID string, kill bool) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envDir+"="+dir, envAgent+"="+agent, envRun+"="+runID)
	if kill {
		cmd.Env = append(cmd.Env, envKill+"=1")
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	err := cmd.Wait()
	killed := false
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if err != nil && !killed {
		t.Fatalf("child %s: %v\nstderr: %s", mode, err, stderr.String())
	}
	return stdout.String(), killed
}
