package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/harnessx/harnessx/cmd/flightrec/internal/progress"
	"github.com/harnessx/harnessx/cmd/flightrec/internal/push"
	"github.com/harnessx/harnessx/cmd/flightrec/internal/recordings"
	"github.com/harnessx/harnessx/cmd/flightrec/internal/timeline"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/recording"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp(ctx, os.Stdout, os.Stderr).run(os.Args[1:])
	stop()
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

// errHelp is returned by parse when help was asked for and printed: exit
// status 0.
var errHelp = errors.New("flightrec: help requested")

// app holds what the commands share: the output, the context that an
// interrupt cancels (ui and trace --follow run until it is done), and the
// timings that tests shorten.
type app struct {
	ctx            context.Context
	stdout, stderr io.Writer
	getenv         func(string) string
	// pollInterval is the time between two reads of trace --follow.
	pollInterval time.Duration
	// progressDelay is how long an export runs before it shows progress
	// (negative: at once).
	progressDelay time.Duration
	// pushBackoff paces the retries of push.
	pushBackoff push.Backoff
	// pushNotice is how long push waits for an answer before it says
	// that it is waiting.
	pushNotice time.Duration
	// serving, if set, is told the URL ui serves on.
	serving func(url string)
	// s3 writes s3:// exports and fetches artifacts from S3; nil in a
	// build without -tags s3.
	s3 s3Support
}

func newApp(ctx context.Context, stdout, stderr io.Writer) *app {
	return &app{ctx: ctx, stdout: stdout, stderr: stderr, getenv: os.Getenv,
		pollInterval: 500 * time.Millisecond, progressDelay: time.Second, pushNotice: 500 * time.Millisecond,
		s3: defaultS3()}
}

const usage = `usage: flightrec <command> [flags] [args]

commands:
  list    [--dir DIR] [--json]                  list recordings, runs and incidents
  export  [--dir DIR] [--run ID | --last] [--recording NAME]
          [--include-artifacts] -o FILE|DIR|s3://…
                                                build an incident bundle from a journal
  events  [--dir DIR] [--run ID | --last] [--recording NAME]
                                                print a journal's events as JSON lines
  show    [--json] FILE                         print a bundle's timeline
  verify  FILE                                  check every member's checksum
  push    [--endpoint URL | --langsmith] [--timeout D] FILE
                                                send a bundle's spans over OTLP/HTTP
  runs    [--traces FILE] [--dir DIR] [-n N]    list recent runs from the trace file and recordings
  trace   [--traces FILE] [--dir DIR] [--attrs] [RUN-ID | TRACE-ID | --last] [--follow]
                                                print a run's span tree
  ui      [--addr HOST:PORT] [--listen-any] [--traces FILE] [--dir DIR]
                                                serve the trace viewer web page

The recording directory is --dir, else $HARNESSX_FLIGHT_DIR, else .harnessx/flight.
The trace file is --traces, else $HARNESSX_TRACES_FILE, else .harnessx/traces.jsonl.
Run 'go doc github.com/harnessx/harnessx/cmd/flightrec' for the manual.
`

// run is the whole command; main only maps its error to an exit status.
func run(stdout, stderr io.Writer, args []string) error {
	return newApp(context.Background(), stdout, stderr).run(args)
}

func (a *app) run(args []string) error {
	err := a.dispatch(args)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func (a *app) dispatch(args []string) error {
	stdout, stderr := a.stdout, a.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "list":
		return cmdList(stdout, stderr, args)
	case "export":
		return a.cmdExport(args)
	case "events":
		return a.cmdEvents(args)
	case "show":
		return cmdShow(stdout, stderr, args)
	case "verify":
		return cmdVerify(stdout, stderr, args)
	case "push":
		return a.cmdPush(args)
	case "runs":
		return a.cmdRuns(args)
	case "trace":
		return a.cmdTrace(args)
	case "ui":
		return a.cmdUI(args)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usagef("unknown command %q", cmd)
}

// parse parses flags that may come before or after the positional
// arguments, and checks the number of positional arguments (nargs; -1
// for zero or one). Help (-h, --help) prints the usage to stdout and
// returns errHelp; a mistake prints it to stderr, once, and returns a
// usage error (the flag package's own message is not printed: main
// prints the error).
func parse(fs *flag.FlagSet, stdout, stderr io.Writer, args []string, nargs int, argName string) ([]string, error) {
	fs.SetOutput(io.Discard)
	printUsage := func(w io.Writer) {
		arg := ""
		switch {
		case nargs > 0:
			arg = " " + argName
		case nargs < 0:
			arg = " [" + argName + "]"
		}
		fmt.Fprintf(w, "usage: flightrec %s [flags]%s\n", fs.Name(), arg)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fs.Usage = func() {} // parse prints the usage itself, once
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(stdout)
				return nil, errHelp
			}
			printUsage(stderr)
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	// After parsing, fs.Usage serves the command's own usage mistakes.
	fs.Usage = func() { printUsage(stderr) }
	if nargs < 0 && len(pos) <= 1 {
		return pos, nil
	}
	if len(pos) != nargs {
		printUsage(stderr)
		if nargs <= 0 {
			extra := pos[0]
			if nargs < 0 {
				extra = pos[1]
			}
			return nil, usagef("%s: unexpected argument %q", fs.Name(), extra)
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
	if _, err := parse(fs, stdout, stderr, args, 0, ""); err != nil {
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
		fmt.Fprintf(stdout, "  %s in %s (%s), %s .. %s\n", count(r.Events, "event", "events"), count(r.Segments, "segment", "segments"),
			size(r.Bytes), stamp(r.First), stamp(r.Last))
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
			fmt.Fprintf(stdout, "  incident %s (%s)\n", filepath.Join(r.Name, recording.IncidentsDir, inc.Name), size(inc.Size))
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

func size(n int64) string { return progress.Size(n) }

// count is "1 segment", "2 segments".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// selectRecording returns the recording under root that a command's
// --run, --last and --recording name (the most recent without them);
// with --last it sets *runID to the run that started last.
func selectRecording(cmd, root string, runID *string, last bool, recName string) (*recordings.Recording, error) {
	recs, err := recordings.Scan(root)
	if err != nil {
		return nil, failf("%s: %v", cmd, err)
	}
	switch {
	case *runID != "":
		r, _, ok := recordings.FindRun(recs, *runID)
		if !ok {
			return nil, failf("%s: run %q is in no recording under %s", cmd, *runID, root)
		}
		return r, nil
	case last:
		r, run, ok := recordings.LastRun(recs)
		if !ok {
			return nil, failf("%s: no run recorded under %s", cmd, root)
		}
		*runID = run.ID
		return r, nil
	case recName != "":
		for _, r := range recs {
			if r.Name == recName {
				return r, nil
			}
		}
		return nil, failf("%s: no recording %q under %s", cmd, recName, root)
	}
	return recs[len(recs)-1], nil
}

// cmdEvents prints the events of a recording's journal as JSON lines,
// whole (what a journal line leaves out put back), oldest first: a
// journal's lines are binary (see the flight package), this is how to
// read one by eye or pipe it to jq.
func (a *app) cmdEvents(args []string) error {
	stdout, stderr := a.stdout, a.stderr
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	dir := dirFlag(fs)
	runID := fs.String("run", "", "print only the events of the run with this ID")
	last := fs.Bool("last", false, "print only the events of the run that started last")
	recName := fs.String("recording", "", "recording (session directory) to read; default the most recent")
	if _, err := parse(fs, stdout, stderr, args, 0, ""); err != nil {
		return err
	}
	if *runID != "" && *last {
		return usagef("events: --run and --last exclude each other")
	}
	rec, err := selectRecording("events", rootDir(*dir), runID, *last, *recName)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	// Redacted again, as export does: a journal that another program
	// wrote may hold what the recorder would have redacted.
	red := flight.NewRedactor(nil)
	var line []byte
	st, err := flight.ReadJournal(rec.Dir, func(e *flight.Event) error {
		if *runID != "" && e.RunID != *runID {
			return nil
		}
		line = e.AppendJSON(line[:0], red)
		_, err := w.Write(line)
		return err
	}, nil)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return failf("events: %v", err)
	}
	if st.Torn > 0 || st.Corrupt > 0 {
		fmt.Fprintf(stderr, "events: %s: skipped %d torn and %d corrupt lines\n", rec.Name, st.Torn, st.Corrupt)
	}
	return nil
}

func (a *app) cmdExport(args []string) error {
	stdout, stderr := a.stdout, a.stderr
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dir := dirFlag(fs)
	runID := fs.String("run", "", "export only the run with this ID")
	last := fs.Bool("last", false, "export only the run that started last")
	recName := fs.String("recording", "", "recording (session directory) to export; default the most recent")
	arts := fs.Bool("include-artifacts", false, "include the recorded artifacts (spilled results and the like)")
	out := fs.String("o", "", "output file (.tar.gz), or a directory to write it in; - for standard output; s3://bucket/prefix/name.tar.gz for S3 (AWS_* variables; a build with -tags s3)")
	if _, err := parse(fs, stdout, stderr, args, 0, ""); err != nil {
		return err
	}
	if *out == "" {
		fs.Usage()
		return usagef("export: -o FILE is required")
	}
	if *runID != "" && *last {
		return usagef("export: --run and --last exclude each other")
	}
	if isS3(*out) && a.s3 == nil {
		return failf("export: cannot write to S3: %s (or export to a file and upload that)", noS3)
	}
	rec, err := selectRecording("export", rootDir(*dir), runID, *last, *recName)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(*out); err == nil && fi.IsDir() && !isS3(*out) {
		// -o DIR writes into DIR, as cp does.
		*out = filepath.Join(*out, bundleName(rec.Name, *runID))
	}
	opts := flight.ExportOptions{RunID: *runID, IncludeArtifacts: *arts}
	if *arts {
		// Results spilled to the shared artifact store are fetched from it.
		tmp, err := os.MkdirTemp("", "flightrec-artifacts-")
		if err != nil {
			return failf("export: %v", err)
		}
		defer os.RemoveAll(tmp)
		opts.Artifacts, opts.MissingArtifacts, err = a.remoteArtifacts(a.ctx, rec.Dir, tmp)
		if err != nil {
			return failf("export: artifacts: %v", err)
		}
	}
	// Progress shows on standard error once the export has run for a
	// second: bytes as each journal segment is read, and its events,
	// counted when the recording was scanned.
	rep := progress.New(stderr, progress.Options{Label: "exporting " + rec.Name, TotalBytes: rec.Bytes, TotalEvents: rec.Events,
		Terminal: isTerminal(stderr), Delay: a.progressDelay})
	seg := 0
	opts.Progress = func(n int64) {
		rep.AddBytes(n)
		if seg < len(rec.SegmentEvents) {
			rep.AddEvents(rec.SegmentEvents[seg])
			seg++
		}
	}
	rep.Start()
	var m *flight.Manifest
	if isS3(*out) {
		m, err = a.s3.Export(a.ctx, *out, rec.Dir, opts, a.getenv)
	} else {
		m, err = writeExport(a.ctx, stdout, *out, rec.Dir, opts)
	}
	rep.Stop()
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
	if m.SpansNote != "" {
		fmt.Fprintf(stderr, "flightrec: export: 0 spans: %s\n", m.SpansNote)
	}
	for _, ma := range m.Missing() {
		fmt.Fprintf(stderr, "flightrec: export: artifact %s not included: %s\n", ma.Name, ma.Reason)
	}
	if n := countParts(m); n > 0 || len(m.MissingParts) > 0 {
		fmt.Fprintf(stdout, "included the bytes of %s\n", count(n, "media part", "media parts"))
	}
	for _, mp := range m.MissingParts {
		fmt.Fprintf(stderr, "flightrec: export: media part %s not included: %s\n", mp.URI, mp.Reason)
	}
	return nil
}

// bundleName is the file name export gives a bundle written into a
// directory: incident-<recording>[-<run>].tar.gz, with any character
// that does not belong in a file name replaced by "_".
func bundleName(recording, runID string) string {
	name := "incident-" + recording
	if runID != "" {
		name += "-" + runID
	}
	safe := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, name)
	return safe + ".tar.gz"
}

func countParts(m *flight.Manifest) int {
	n := 0
	for _, mem := range m.Members {
		if strings.HasPrefix(mem.Name, flight.PartsDir) {
			n++
		}
	}
	return n
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
// it, so that a failed export leaves no partial bundle. Its errors name
// out, never the temporary file.
func writeExport(ctx context.Context, stdout io.Writer, out, dir string, opts flight.ExportOptions) (*flight.Manifest, error) {
	if out == "-" {
		return flight.ExportJournal(ctx, dir, stdout, opts)
	}
	outDir := filepath.Dir(out)
	if fi, err := os.Stat(outDir); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot write %s: the directory %s does not exist", out, outDir)
		}
		return nil, fmt.Errorf("cannot write %s: %v", out, pathless(err))
	}
	f, err := os.CreateTemp(outDir, "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", out, pathless(err))
	}
	m, err := flight.ExportJournal(ctx, dir, f, opts)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cannot write %s: %v", out, pathless(cerr))
	}
	if err == nil {
		if rerr := os.Rename(f.Name(), out); rerr != nil {
			err = fmt.Errorf("cannot write %s: %v", out, pathless(rerr))
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return m, nil
}

// pathless returns the cause of a path error without the path (the
// caller names the path once), or err itself.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
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
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return nil, failf("%s: %s is a directory, not a bundle (to build a bundle from a recording, use flightrec export)", cmd, file)
	}
	b, err := flight.ReadBundleFile(file, flight.ReadOptions{})
	if err != nil {
		return nil, failf("%s: %s: %v", cmd, file, strings.TrimPrefix(pathless(err).Error(), "flight: "))
	}
	return b, nil
}

func cmdShow(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the timeline as JSON")
	pos, err := parse(fs, stdout, stderr, args, 1, "FILE")
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
	pos, err := parse(fs, stdout, stderr, args, 1, "FILE")
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
	// Problems with members the manifest does not list: extra members,
	// and media parts referenced but absent.
	listed := map[string]bool{}
	for _, m := range b.Manifest.Members {
		listed[m.Name] = true
	}
	if ve != nil {
		for _, p := range ve.Problems {
			if !listed[p.Member] {
				listed[p.Member] = true
				fmt.Fprintf(tw, "FAIL\t%s\t%s\n", p.Member, p.Reason)
			}
		}
	}
	for _, mp := range b.Manifest.MissingParts {
		fmt.Fprintf(tw, "missing\t%s\t%s\n", mp.URI, mp.Reason)
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

func (a *app) cmdPush(args []string) error {
	stdout, stderr := a.stdout, a.stderr
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "OTLP/HTTP traces URL (default from OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318); a URL without a path gets /v1/traces")
	langsmith := fs.Bool("langsmith", false, "send to LangSmith: {LANGSMITH_ENDPOINT}/otel/v1/traces with LANGSMITH_API_KEY and LANGSMITH_PROJECT")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long, retries included")
	service := fs.String("service", "", "service name for spans whose resource names none (default: the bundle's service)")
	pos, err := parse(fs, stdout, stderr, args, 1, "FILE")
	if err != nil {
		return err
	}
	target, err := push.Resolve(*endpoint, *langsmith, a.getenv)
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
	data, ok := b.Member(flight.SpansName)
	if !ok {
		return failf("push: %s: the bundle has no %s", pos[0], flight.SpansName)
	}
	req, err := otlpjson.Unmarshal(data)
	if err != nil {
		return failf("push: %s: %s: %v", pos[0], flight.SpansName, err)
	}
	n := otlpspans.Count(req)
	if n == 0 {
		if note := b.Manifest.SpansNote; note != "" {
			return failf("push: %s: the bundle has no spans: %s", pos[0], note)
		}
		return failf("push: %s: the bundle has no spans", pos[0])
	}
	svc := *service
	if svc == "" {
		svc = b.Manifest.Service
	}
	push.NameService(req, svc)
	err = a.sendWaiting(target, req, n, *timeout)
	if err != nil {
		var gu *push.GiveUpError
		if errors.As(err, &gu) {
			return failf("push: %s: no success within --timeout %s (%d attempts): %v", target.Display, *timeout, gu.Attempts, gu.Err)
		}
		return failf("push: %s: %v", target.Display, err)
	}
	fmt.Fprintf(stdout, "pushed %d spans to %s\n", n, target.Display)
	return nil
}

// sendWaiting sends the n spans of req to target, and says on stderr,
// once, that it is waiting, and for what, when the endpoint has not
// answered within pushNotice or an attempt failed and will be retried:
// a push to an endpoint that is not up is not silent until --timeout.
func (a *app) sendWaiting(target push.Target, req *coltracepb.ExportTraceServiceRequest, n int, timeout time.Duration) error {
	var mu sync.Mutex
	said, done := false, false
	say := func(why string) {
		mu.Lock()
		defer mu.Unlock()
		if said || done {
			return
		}
		said = true
		fmt.Fprintf(a.stderr, "flightrec: push: waiting for %s to take %s: %s; retrying until --timeout %s (interrupt to stop)\n",
			target.Display, count(n, "span", "spans"), why, timeout)
	}
	timer := time.AfterFunc(a.pushNotice, func() { say(fmt.Sprintf("still sending after %s", a.pushNotice)) })
	err := push.Send(a.ctx, target, req, timeout, a.pushBackoff, func(_ int, err error) { say(push.Cause(err)) })
	timer.Stop()
	mu.Lock()
	done = true
	mu.Unlock()
	return err
}
