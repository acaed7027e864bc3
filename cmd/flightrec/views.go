package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/internal/traceview"
)

// sourceFlags adds --traces and --dir and returns the sources they name.
func (a *app) sourceFlags(fs *flag.FlagSet) func() traceview.Sources {
	traces := fs.String("traces", "", "trace file (default $HARNESSX_TRACES_FILE, else .harnessx/traces.jsonl)")
	dir := dirFlag(fs)
	return func() traceview.Sources {
		file := *traces
		if file == "" {
			file = exporters.TracesFile()
		}
		return traceview.Sources{TraceFiles: []string{file}, FlightDirs: []string{rootDir(*dir)}}
	}
}

func describeSources(src traceview.Sources) string {
	return strings.Join(append(append([]string{}, src.TraceFiles...), src.FlightDirs...), " and ")
}

// load reads the sources, warning on stderr about files it skipped.
func (a *app) load(cmd string, src traceview.Sources) *traceview.Catalog {
	cat := traceview.Load(src)
	for _, p := range cat.Problems {
		fmt.Fprintf(a.stderr, "flightrec: %s: warning: %s\n", cmd, strings.TrimPrefix(p, "traceview: "))
	}
	return cat
}

func (a *app) cmdRuns(args []string) error {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	sources := a.sourceFlags(fs)
	n := fs.Int("n", 20, "show the last `N` runs (0 for all)")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, a.stdout, a.stderr, args, 0, ""); err != nil {
		return err
	}
	if *n < 0 {
		return usagef("runs: -n must not be negative")
	}
	if err := checkGiven("runs", fs); err != nil {
		return err
	}
	src := sources()
	runs := a.load("runs", src).Runs
	if len(runs) == 0 {
		return noRuns("runs", src)
	}
	if *n > 0 && len(runs) > *n {
		runs = runs[len(runs)-*n:]
	}
	if *asJSON {
		type runJSON struct {
			ID      string `json:"id"`
			TraceID string `json:"trace_id"`
			traceview.Summary
		}
		out := make([]runJSON, len(runs))
		for i, r := range runs {
			out[i] = runJSON{r.ID, r.TraceID, r.Summary}
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return traceview.WriteRunList(a.stdout, runs)
}

// readRun reads the spans of a run of the catalog.
func readRun(cmd string, cat *traceview.Catalog, info *traceview.RunInfo) (*traceview.Run, error) {
	run, err := cat.Run(info)
	if err != nil {
		return nil, failf("%s: %s", cmd, strings.TrimPrefix(err.Error(), "traceview: "))
	}
	return run, nil
}

func (a *app) cmdTrace(args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	sources := a.sourceFlags(fs)
	last := fs.Bool("last", false, "print the run that started last (the default without an ID)")
	follow := fs.Bool("follow", false, "print each new run of the trace file as it completes, until interrupted")
	attrs := fs.Bool("attrs", false, "print every attribute under its span")
	pos, err := parse(fs, a.stdout, a.stderr, args, -1, "RUN-ID | TRACE-ID")
	if err != nil {
		return err
	}
	if len(pos) == 1 && (*last || *follow) {
		return usagef("trace: a run ID excludes --last and --follow")
	}
	if err := checkGiven("trace", fs); err != nil && !*follow {
		return err
	}
	src := sources()
	opts := traceview.TreeOptions{Attributes: *attrs}
	if *follow {
		if *last {
			if cat := a.load("trace", src); len(cat.Runs) > 0 {
				run, err := readRun("trace", cat, cat.Runs[len(cat.Runs)-1])
				if err != nil {
					return err
				}
				if err := traceview.WriteTree(a.stdout, run, opts); err != nil {
					return err
				}
				fmt.Fprintln(a.stdout)
			}
		}
		file := src.TraceFiles[0]
		fmt.Fprintf(a.stderr, "following %s (interrupt to stop)\n", file)
		return traceview.Follow(a.ctx, file, traceview.FollowOptions{Interval: a.pollInterval}, func(r *traceview.Run) error {
			if err := traceview.WriteTree(a.stdout, r, opts); err != nil {
				return err
			}
			_, err := fmt.Fprintln(a.stdout)
			return err
		})
	}
	cat := a.load("trace", src)
	if len(cat.Runs) == 0 {
		return noRuns("trace", src)
	}
	info := cat.Runs[len(cat.Runs)-1]
	if len(pos) == 1 {
		r, ok := cat.FindRun(pos[0])
		if !ok {
			return failf("trace: no run or trace %q in %s", pos[0], describeSources(src))
		}
		info = r
	}
	run, err := readRun("trace", cat, info)
	if err != nil {
		return err
	}
	return traceview.WriteTree(a.stdout, run, opts)
}

// defaultUIAddr is where ui listens without --addr.
const defaultUIAddr = "127.0.0.1:7318"

// errNotLoopback is returned for a non-loopback --addr without --listen-any.
var errNotLoopback = errors.New("is not a loopback address")

// checkAddr accepts loopback listening addresses: 127.0.0.0/8, ::1 and
// localhost. An empty host listens on every interface and is refused.
func checkAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errNotLoopback
}

func (a *app) cmdUI(args []string) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	sources := a.sourceFlags(fs)
	addr := fs.String("addr", defaultUIAddr, "listen on `HOST:PORT` (port 0 picks a free one)")
	listenAny := fs.Bool("listen-any", false, "allow a non-loopback --addr: anyone who can reach it can read the traces")
	if _, err := parse(fs, a.stdout, a.stderr, args, 0, ""); err != nil {
		return err
	}
	if err := checkAddr(*addr); err != nil {
		if errors.Is(err, errNotLoopback) && !*listenAny {
			return usagef("ui: --addr %s %v: the traces hold prompts and tool results; pass --listen-any to serve them beyond this machine", *addr, err)
		}
		if !errors.Is(err, errNotLoopback) {
			return usagef("ui: --addr %s: %v", *addr, err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return listenError(*addr, err)
	}
	src := sources()
	srv := &http.Server{
		Handler:           traceview.Handler(traceview.HandlerOptions{Sources: src, AnyHost: *listenAny}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(a.stdout, "serving the runs of %s on %s (interrupt to stop)\n", describeSources(src), url)
	if a.serving != nil {
		a.serving(url)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return failf("ui: %v", err)
	case <-a.ctx.Done():
	}
	ctx, cancel := contextWithTimeout(5 * time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return failf("ui: %v", err)
	}
	<-errc
	return nil
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
