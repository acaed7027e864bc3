package harness_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// source plays an MCP-like server whose tool list changes: its transform
// adds the current list to the catalog.
type source struct {
	mu    sync.Mutex
	names []string
}

func (s *source) set(names ...string) {
	s.mu.Lock()
	s.names = names
	s.mu.Unlock()
}

func (s *source) transform(tools []*harness.Tool) []*harness.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.names {
		tools = append(tools, &harness.Tool{Name: "srv__" + n, Description: "server tool " + n, Deferred: true,
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler:     func(context.Context, json.RawMessage) (string, error) { return "ran " + n, nil }})
	}
	return tools
}

// policy asks before any server tool and hides deleting ones; it marks
// what it edits.
func policy(tools []*harness.Tool) []*harness.Tool {
	out := tools[:0]
	for _, t := range tools {
		if !strings.HasPrefix(t.Name, "srv__") {
			out = append(out, t)
			continue
		}
		if strings.Contains(t.Name, "delete") {
			continue
		}
		c := *t
		c.Permission = harness.PermissionAsk
		c.Description = "[untrusted] " + c.Description
		out = append(out, &c)
	}
	return out
}

func suffix(s string) harness.ToolTransform {
	return func(tools []*harness.Tool) []*harness.Tool {
		for i, t := range tools {
			c := *t
			c.Description += s
			tools[i] = &c
		}
		return tools
	}
}

type prioExt struct {
	funcExt
	prio int
}

func (e *prioExt) Priority() int { return e.prio }

func TestTransformOrder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		prioA, prioB int
		wantSuffix   string
	}{
		{name: "install order", prioA: 10, prioB: 20, wantSuffix: "Echo the text. [a] [b]"},
		{name: "reversed", prioA: 20, prioB: 10, wantSuffix: "Echo the text. [b] [a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithExtensions(
				&prioExt{funcExt{name: "a", install: func(ec *harness.ExtensionContext) error { _, err := ec.TransformTools(suffix(" [a]")); return err }}, tc.prioA},
				&prioExt{funcExt{name: "b", install: func(ec *harness.ExtensionContext) error { _, err := ec.TransformTools(suffix(" [b]")); return err }}, tc.prioB},
			))
			if got := a.Tools().Offered()[0].Description; got != tc.wantSuffix {
				t.Errorf("description = %q; want %q", got, tc.wantSuffix)
			}
		})
	}
}

func TestTransformEditAppliesOnce(t *testing.T) {
	ext := &funcExt{name: "mark", install: func(ec *harness.ExtensionContext) error {
		_, err := ec.TransformTools(suffix(" (v2)"))
		return err
	}}
	p := ht.NewScriptedProvider(ht.Reply("a"), ht.Reply("b"))
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithExtensions(ext))
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	// Registration changes and refreshes rebuild the catalog again and again.
	other := echoTool()
	other.Name = "other"
	h, _ := ext.ec.RegisterTool(other)
	ext.ec.RefreshTools()
	ext.ec.RefreshTools()
	h.Close()
	if _, err := a.Run(context.Background(), "y"); err != nil {
		t.Fatal(err)
	}
	for i, req := range p.Requests() {
		if got := req.Tools[0].Description; got != "Echo the text. (v2)" {
			t.Errorf("request %d description = %q; the edit must apply exactly once", i+1, got)
		}
	}
	if tool, _ := a.Tool("echo"); tool.Description != "Echo the text. (v2)" {
		t.Errorf("catalog tool description = %q", tool.Description)
	}
}

func TestTransformRefreshKeepsPolicy(t *testing.T) {
	src := &source{}
	src.set("read", "write")
	var srcEC *harness.ExtensionContext
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithExtensions(
		&prioExt{funcExt{name: "server", install: func(ec *harness.ExtensionContext) error {
			srcEC = ec
			_, err := ec.TransformTools(src.transform)
			return err
		}}, 10},
		&prioExt{funcExt{name: "policy", install: func(ec *harness.ExtensionContext) error {
			_, err := ec.TransformTools(policy)
			return err
		}}, 20},
	))
	check := func(want ...string) {
		t.Helper()
		if got := a.Inventory().Tools; !slices.Equal(got, append([]string{"echo"}, want...)) {
			t.Errorf("catalog = %q; want echo %q", got, want)
		}
		for _, n := range want {
			tool, _ := a.Tool(n)
			if tool.Permission != harness.PermissionAsk || strings.Count(tool.Description, "[untrusted]") != 1 {
				t.Errorf("%s: permission %s, description %q; the policy must hold exactly once", n, tool.Permission, tool.Description)
			}
		}
	}
	check("srv__read", "srv__write")
	// The server's list changes; the refresh rebuilds from the base, so
	// the policy applies to the new list too and hides the deleting tool.
	src.set("read", "write", "delete_all", "search")
	srcEC.RefreshTools()
	check("srv__read", "srv__write", "srv__search")
	if err := a.Tools().Activate("srv__search"); err != nil {
		t.Fatal(err)
	}
	src.set("read", "search")
	srcEC.RefreshTools()
	check("srv__read", "srv__search")
	if got := toolNames(a.Tools().Offered()); !slices.Equal(got, []string{"echo", "srv__search"}) {
		t.Errorf("offered after refresh = %q; the activation must survive a refresh", got)
	}
	if err := a.Tools().Activate("srv__delete_all"); err == nil {
		t.Error("a tool the policy hides can be activated")
	}
}

func TestTransformDroppedSourceDisappears(t *testing.T) {
	src := &source{}
	src.set("read")
	var h *harness.Handle
	ext := &funcExt{name: "server", install: func(ec *harness.ExtensionContext) (err error) {
		h, err = ec.TransformTools(src.transform)
		return err
	}}
	p := ht.NewScriptedProvider(ht.CallTool("c1", "srv__read", `{}`), ht.Reply("done"))
	a := newAgent(t, p, harness.WithTools(echoTool()), harness.WithExtensions(ext))
	if err := a.Tools().Activate("srv__read"); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(a.Tools().Offered()); !slices.Equal(got, []string{"echo", "srv__read"}) {
		t.Fatalf("offered = %q", got)
	}
	h.Close() // the server is removed
	if got := a.Inventory().Tools; !slices.Equal(got, []string{"echo"}) {
		t.Errorf("catalog after dropping the source = %q; want [echo]", got)
	}
	res, err := a.Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(p.Requests()[0].Tools); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("request tools = %q", got)
	}
	if r := res.Messages[2].Content[0].ToolResult; r.Status != harness.ToolUnknown {
		t.Errorf("a call of a dropped source's tool: %+v; want unknown tool", r)
	}
}

func TestTransformSeesBase(t *testing.T) {
	var seen []string
	log, buf := logBuffer()
	ext := &funcExt{name: "x", install: func(ec *harness.ExtensionContext) error {
		other := echoTool()
		other.Name = "ext_tool"
		if _, err := ec.RegisterTool(other); err != nil {
			return err
		}
		_, err := ec.TransformTools(func(tools []*harness.Tool) []*harness.Tool {
			seen = seen[:0]
			for _, t := range tools {
				seen = append(seen, t.Name)
			}
			// An invalid tool and a duplicate are dropped.
			return append(tools, &harness.Tool{Name: "broken"}, tools[0])
		})
		return err
	}}
	a := newAgent(t, ht.NewScriptedProvider(), harness.WithTools(echoTool()), harness.WithLogger(log), harness.WithExtensions(ext))
	if !slices.Equal(seen, []string{"echo", "ext_tool"}) {
		t.Errorf("transform saw %q; want the native tool and the registration", seen)
	}
	if got := a.Inventory().Tools; !slices.Equal(got, []string{"echo", "ext_tool"}) {
		t.Errorf("catalog = %q", got)
	}
	if !strings.Contains(buf.String(), "invalid tool") || !strings.Contains(buf.String(), "twice") {
		t.Errorf("log lacks the dropped tools: %s", buf)
	}
}
