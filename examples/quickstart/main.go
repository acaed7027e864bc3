package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harnessx/harnessx/examples/quickstart/internal/demo"
)

func main() {
	err := run(context.Background(), os.Stdout, os.Stderr, os.Args[1:], os.Getenv)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "quickstart:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is a mistake in how the quickstart was started: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run is the whole program. Without -live it runs the scripted model,
// whatever API keys the environment holds; with -live it runs the vendor
// this build was compiled for (see vendors).
func run(ctx context.Context, stdout, stderr io.Writer, args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	live := fs.Bool("live", false, "call a real model: build with -tags anthropic or -tags openai and set its API key")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./examples/quickstart [-live]\n\n"+
			"Offline by default. For a real model:\n"+
			"  ANTHROPIC_API_KEY=… go run -tags anthropic ./examples/quickstart -live\n"+
			"  OPENAI_API_KEY=…    go run -tags openai ./examples/quickstart -live\n"+
			"(the first build with a vendor SDK takes minutes)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q (usage: go run ./examples/quickstart [-live])", fs.Arg(0))}
	}
	if !*live {
		if k := keySet(getenv); k != "" {
			fmt.Fprintf(stderr, "quickstart: offline (scripted model) although %s is set; -live calls the real model\n", k)
		}
		return demo.Run(ctx, stdout, demo.Offline())
	}
	b, err := liveBackend(vendors(), getenv)
	if err != nil {
		return err
	}
	return demo.Run(ctx, stdout, b)
}

// vendor is a real model the quickstart can call with -live. Its SDK is
// compiled only into a build with its tag; newProvider is nil otherwise.
type vendor struct {
	name   string // also the build tag
	keyVar string
	// newProvider builds the backend; nil when the build lacks the tag.
	newProvider func() (demo.Backend, error)
}

// vendors lists the real models, Anthropic first: with both compiled in
// and both keys set, -live uses Anthropic.
func vendors() []vendor {
	vs := []vendor{
		{name: "anthropic", keyVar: "ANTHROPIC_API_KEY"},
		{name: "openai", keyVar: "OPENAI_API_KEY"},
	}
	if anthropicBuilt {
		vs[0].newProvider = newAnthropic
	}
	if openaiBuilt {
		vs[1].newProvider = newOpenAI
	}
	return vs
}

// errNotBuilt is what a vendor left out of the build returns; liveBackend
// never calls it.
var errNotBuilt = errors.New("this vendor's SDK is not in this build")

const (
	anthropicModel = "claude-haiku-5-5"
	openaiModel    = "gpt-5.4-mini"
)

// keySet names the first vendor API key variable that is set, or "".
func keySet(getenv func(string) string) string {
	for _, v := range vendors() {
		if getenv(v.keyVar) != "" {
			return v.keyVar
		}
	}
	return ""
}

// liveBackend picks the first vendor of vs that this build compiled and
// whose key is set, or says in one error what is missing: the build tag
// or the key.
func liveBackend(vs []vendor, getenv func(string) string) (demo.Backend, error) {
	var built, keyed []vendor
	for _, v := range vs {
		if v.newProvider != nil {
			built = append(built, v)
			if getenv(v.keyVar) != "" {
				return v.newProvider()
			}
		}
		if getenv(v.keyVar) != "" {
			keyed = append(keyed, v)
		}
	}
	if len(built) == 0 {
		var how []string
		for _, v := range vs {
			how = append(how, fmt.Sprintf("%s=… go run -tags %s ./examples/quickstart -live", v.keyVar, v.name))
		}
		if len(keyed) > 0 {
			how = []string{fmt.Sprintf("go run -tags %s ./examples/quickstart -live", keyed[0].name)}
		}
		return demo.Backend{}, &usageError{"-live: this build has no model SDK compiled in (they are left out of the offline build); run " +
			strings.Join(how, ", or ") + " (the first build with a vendor SDK takes minutes)"}
	}
	var keys []string
	for _, v := range built {
		keys = append(keys, v.keyVar)
	}
	msg := fmt.Sprintf("-live: %s is not set (this build calls %s)", strings.Join(keys, " or "), names(built))
	if len(keyed) > 0 {
		msg += fmt.Sprintf("; %s is set: build with -tags %s to use it", keyed[0].keyVar, keyed[0].name)
	}
	return demo.Backend{}, &usageError{msg}
}

func names(vs []vendor) string {
	var n []string
	for _, v := range vs {
		n = append(n, v.name)
	}
	return strings.Join(n, " or ")
}
