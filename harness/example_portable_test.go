package harness_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/harnessx/harnessx/harness"
	ht "github.com/harnessx/harnessx/harness/harnesstest"
)

// webAccess keeps its search tool deferred until web_enable activates it,
// remembers queries in session storage, and lists them with /history.
type webAccess struct{}

func (webAccess) Name() string { return "web" }

func (webAccess) Install(ec *harness.ExtensionContext) error {
	pages := ec.Storage("web").Session(ec.SessionID())

	search := harness.MustTool(harness.NewTool("web_search", "Search the web.",
		func(ctx context.Context, in struct {
			Q string `json:"q"`
		}) (string, error) {
			if err := pages.Put(ctx, "queries/"+in.Q, in.Q); err != nil {
				return "", err
			}
			return "3 results for " + in.Q, nil
		}))
	search.Deferred = true
	enable := harness.MustTool(harness.NewTool("web_enable", "Enable web access.",
		func(ctx context.Context, _ struct{}) (string, error) {
			return "web access enabled", harness.ActivateTools(ctx, "web_search")
		}))
	for _, t := range []*harness.Tool{search, enable} {
		if _, err := ec.RegisterTool(t); err != nil {
			return err
		}
	}
	if _, err := ec.Instructions().Set("web", "Enable web access before searching."); err != nil {
		return err
	}
	_, err := ec.RegisterCommand(harness.Command{Name: "history", Description: "List past searches.",
		Run: func(ctx context.Context, _ string) (harness.CommandResult, error) {
			keys, err := pages.List(ctx, "queries/")
			return harness.CommandResult{Output: strings.Join(keys, "\n")}, err
		}})
	return err
}

func Example_portableExtension() {
	dir, _ := os.MkdirTemp("", "harnessx-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	p := ht.NewScriptedProvider(
		ht.CallTool("c1", "web_enable", `{}`),
		ht.CallTool("c2", "web_search", `{"q":"go generics"}`),
		ht.Reply("Found 3 results."))
	a, err := harness.New(harness.WithProvider(p), harness.WithStateDir(dir), harness.WithExtensions(webAccess{}))
	if err != nil {
		panic(err)
	}
	defer a.Close(ctx)

	fmt.Println("offered:", toolNames(a.Tools().Offered()))
	res, _ := a.Run(ctx, "search for go generics")
	fmt.Println(res.Text)
	fmt.Println("offered:", toolNames(a.Tools().Offered()))
	res, _ = a.Run(ctx, "/history")
	fmt.Println(res.Text)
	_, err = a.Run(ctx, "/nope")
	fmt.Println(err)
	// Output:
	// offered: [web_enable]
	// Found 3 results.
	// offered: [web_search web_enable]
	// queries/go generics
	// harness: unknown command /nope; available commands: /history
}
