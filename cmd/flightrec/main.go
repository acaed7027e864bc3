package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harnessx/harnessx/cmd/flightrec/internal/push"
	"github.com/harnessx/harnessx/cmd/flightrec/internal/recordings"
	"github.com/harnessx/harnessx/cmd/flightrec/internal/timeline"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/schollz/progressbar/v3"
)

func main() {
	err := run(os.Stdout, os.Stderr, os.Args[1:])
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, err)
	var ue *usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return "flightrec: " + e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// failf returns an error prefixed with "flightrec: ".
func failf(format string, args ...any) error { return fmt.Errorf("flightrec: "+format, args...) }

const usage = `usage: flightrec <command> [flags] [args]

commands:
  list    [--dir DIR] [--json]                  list recordings, runs and incidents
  export  [--dir DIR] [--run ID | --last] [--recording NAME]
          [--include-artifacts] -o FILE         build an incident bundle from a journal
  show    [--json] FILE                         print a bundle's timeline
  verify  FILE                                  check every member's checksum
  push    [--endpoint URL | --langsmith] [--timeout D] FILE
                                                send a bundle's spans over OTLP/HTTP

The recording directory is --dir, else $HARNESSX_FLIGHT_DIR, else .harnessx/flight.
Run 'go doc github.com/harnessx/harnessx/cmd/flightrec' for the manual.
`

// run is the whole command; main only maps its error to an exit status.
func run(stdout, stderr io.Writer, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "list":
		return cmdList(stdout, stderr, args)
	case "export":
		return cmdExport(stdout, stderr, args)
	case "show":
		return cmdShow(stdout, stderr, args)
	case "verify":
		return cmdVerify(stdout, stderr, args)
	case "push":
		return cmdPush(stdout, stderr, args)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usagef("unknown command %q", cmd)
}

// parse parses flags that may come before or after the positional
// arguments, and checks the number of positional arguments.
func parse(fs *flag.FlagSet, stderr io.Writer, args []string, nargs int, argName string) ([]string, error) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flightrec %s [flags]%s\n", fs.Name(), map[bool]string{true: " " + argName, false: ""}[nargs > 0])
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, usagef("%s: help requested", fs.Name())
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) != nargs {
		fs.Usage()
		if nargs == 0 {
			return nil, usagef("%s: unexpected argument %q", fs.Name(), pos[0])
		}
		return nil, usagef("%s: want %d argument (%s), got %d", fs.Name(), nargs, argName, len(pos))
	}
	return pos, nil
}

func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", "", "recording directory (default $HARNESSX_FLIGHT_DIR, else .harnessx/flight)")
}

func rootDir(flagDir string) string {
	if flagDir != "" {
		return flagDir
	}
	return flight.DefaultDir()
}

func cmdList(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	dir := dirFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, stderr, args, 0, ""); err != nil {
		return err
	}
	recs, err := recordings.Scan(rootDir(*dir))
	if err != nil {
		return failf("list: %v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	}
	for i, r := range recs {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "recording %s (agent %s, session %s)\n", r.Name, r.Agent, r.SessionID)
		fmt.Fprintf(stdout, "  %d events in %d segments (%s), %s .. %s\n", r.Events, r.Segments, size(r.Bytes), stamp(r.First), stamp(r.Last))
		if r.Torn+r.Corrupt > 0 {
			fmt.Fprintf(stdout, "  %d torn and %d corrupt lines skipped\n", r.Torn, r.Corrupt)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		if len(r.Runs) > 0 {
			fmt.Fprintf(tw, "  RUN\tSTATUS\tEVENTS\tSTART\tDURATION\tTOOLS\tTOKENS IN/OUT\tFAILURES\n")
		}
		for _, run := range r.Runs {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%d\t%d/%d\t%d\n", run.ID, run.Status, run.Events, stamp(run.Start),
				run.End.Sub(run.Start).Round(time.Millisecond), run.ToolCalls, run.InputTokens, run.OutputTokens, run.Failures)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, inc := range r.Incidents {
			fmt.Fprintf(stdout, "  incident %s (%s)\n", filepath.Join(r.Name, flight.IncidentsDir, inc.Name), size(inc.Size))
		}
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// progressThreshold is the journal size above which export shows a
// progress bar even when stderr is not a terminal.
const progressThreshold = 64 << 20

func cmdExport(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dir := dirFlag(fs)
	runID := fs.String("run", "", "export only the run with this ID")
	last := fs.Bool("last", false, "export only the run that started last")
	recName := fs.String("recording", "", "recording (session directory) to export; default the most recent")
	arts := fs.Bool("include-artifacts", false, "include the recorded artifacts (spilled results and the like)")
	out := fs.String("o", "", "output file (.tar.gz); - for standard output")
	if _, err := parse(fs, stderr, args, 0, ""); err != nil {
		return err
	}
	if *out == "" {
		fs.Usage()
		return usagef("export: -o FILE is required")
	}
	if *runID != "" && *last {
		return usagef("export: --run and --last exclude each other")
	}
	root := rootDir(*dir)
	recs, err := recordings.Scan(root)
	if err != nil {
		return failf("export: %v", err)
	}
	var rec *recordings.Recording
	switch {
	case *runID != "":
		r, _, ok := recordings.FindRun(recs, *runID)
		if !ok {
			return failf("export: run %q is in no recording under %s", *runID, root)
		}
		rec = r
	case *last:
		r, run, ok := recordings.LastRun(recs)
		if !ok {
			return failf("export: no run recorded under %s", root)
		}
		rec, *runID = r, run.ID
	case *recName != "":
		for _, r := range recs {
			if r.Name == *recName {
				rec = r
			}
		}
		if rec == nil {
			return failf("export: no recording %q under %s", *recName, root)
		}
	default:
		rec = recs[len(recs)-1]
	}
	opts := flight.ExportOptions{RunID: *runID, IncludeArtifacts: *arts}
	if isTerminal(stderr) || rec.Bytes > progressThreshold {
		bar := progressbar.NewOptions64(rec.Bytes,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("exporting "+rec.Name),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		opts.Progress = func(n int64) { bar.Add64(n) }
		defer bar.Finish()
	}
	m, err := writeExport(stdout, *out, rec.Dir, opts)
	if err != nil {
		return failf("export: %v", err)
	}
	if *out == "-" {
		return nil
	}
	redacted := 0
	for _, n := range m.Redaction.Counts {
		redacted += n
	}
	fmt.Fprintf(stdout, "wrote %s: %d events, %d spans, %d artifacts, %d redactions (recording %s", *out, m.Events,
		m.Spans, countArtifacts(m), redacted, rec.Name)
	if *runID != "" {
		fmt.Fprintf(stdout, ", run %s", *runID)
	}
	fmt.Fprintln(stdout, ")")
	if m.Journal != nil && m.Journal.Torn+m.Journal.Corrupt > 0 {
		fmt.Fprintf(stdout, "skipped %d torn and %d corrupt journal lines\n", m.Journal.Torn, m.Journal.Corrupt)
	}
	for _, a := range m.MissingArtifacts {
		fmt.Fprintf(stdout, "missing artifact: %s\n", a)
	}
	return nil
}

func countArtifacts(m *flight.Manifest) int {
	n := 0
	for _, mem := range m.Members {
		if strings.HasPrefix(mem.Name, flight.ArtifactsDir) {
			n++
		}
	}
	return n
}

// writeExport writes the bundle to a temporary file beside out and renames
// it, so that a failed export leaves no partial bundle.
func writeExport(stdout io.Writer, out, dir string, opts flight.ExportOptions) (*flight.Manifest, error) {
	ctx := context.Background()
	if out == "-" {
		return flight.ExportJournal(ctx, dir, stdout, opts)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return nil, err
	}
	m, err := flight.ExportJournal(ctx, dir, f, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), out)
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return m, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func readBundle(cmd, file string) (*flight.Bundle, error) {
	b, err := flight.ReadBundleFile(file, flight.ReadOptions{})
	if err != nil {
		return nil, failf("%s: %s: %v", cmd, file, strings.TrimPrefix(err.Error(), "flight: "))
	}
	return b, nil
}

func cmdShow(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the timeline as JSON")
	pos, err := parse(fs, stderr, args, 1, "FILE")
	if err != nil {
		return err
	}
	b, err := readBundle("show", pos[0])
	if err != nil {
		return err
	}
	tl, err := timeline.Build(pos[0], b)
	if err != nil {
		return failf("show: %s: %v", pos[0], err)
	}
	if *asJSON {
		return tl.WriteJSON(stdout)
	}
	return tl.WriteText(stdout)
}

func cmdVerify(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	pos, err := parse(fs, stderr, args, 1, "FILE")
	if err != nil {
		return err
	}
	b, err := readBundle("verify", pos[0])
	if err != nil {
		return err
	}
	verr := b.Verify()
	bad := map[string]string{}
	var ve *flight.VerifyError
	if errors.As(verr, &ve) {
		for _, p := range ve.Problems {
			bad[p.Member] = p.Reason
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, m := range b.Manifest.Members {
		if why, ok := bad[m.Name]; ok {
			fmt.Fprintf(tw, "FAIL\t%s\t%s\n", m.Name, why)
			continue
		}
		fmt.Fprintf(tw, "ok\t%s\t%d bytes\tsha256 %s\n", m.Name, m.Size, m.SHA256)
	}
	for _, m := range b.Members {
		if why, ok := bad[m.Name]; ok && why == "not listed in the manifest" {
			fmt.Fprintf(tw, "FAIL\t%s\t%s\n", m.Name, why)
		}
	}
	tw.Flush()
	if ve != nil {
		names := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			names[i] = p.Member
		}
		return failf("verify: %s: %d member(s) failed: %s", pos[0], len(names), strings.Join(names, ", "))
	}
	fmt.Fprintf(stdout, "%s: ok, %d members verified\n", pos[0], len(b.Manifest.Members))
	return nil
}

func cmdPush(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "OTLP/HTTP traces URL (default from OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318); a URL without a path gets /v1/traces")
	langsmith := fs.Bool("langsmith", false, "send to LangSmith: {LANGSMITH_ENDPOINT}/otel/v1/traces with LANGSMITH_API_KEY and LANGSMITH_PROJECT")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long, retries included")
	pos, err := parse(fs, stderr, args, 1, "FILE")
	if err != nil {
		return err
	}
	target, err := push.Resolve(*endpoint, *langsmith, os.Getenv)
	if err != nil {
		return usagef("push: %v", err)
	}
	b, err := readBundle("push", pos[0])
	if err != nil {
		return err
	}
	if err := b.Verify(); err != nil {
		return failf("push: %s: refusing to push a bundle that fails verification: %v", pos[0], strings.TrimPrefix(err.Error(), "flight: "))
	}
	req, err := b.Spans()
	if err != nil {
		return failf("push: %s: %v", pos[0], err)
	}
	n := flight.CountSpans(req)
	if n == 0 {
		return failf("push: %s: the bundle has no spans", pos[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := push.Send(ctx, target, req, *timeout); err != nil {
		return failf("push: %s: %v", target.Display, err)
	}
	fmt.Fprintf(stdout, "pushed %d spans to %s\n", n, target.Display)
	return nil
}
