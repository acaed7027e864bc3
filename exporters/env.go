package exporters

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FromEnv returns a provider that sends spans to every backend the
// environment (or the options) names, several at once:
//
//   - OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or [WithEndpointURL] is
//     given (see [NewOTLP]);
//   - LangSmith when LANGSMITH_API_KEY is set, or [WithAPIKey] is given
//     (see [NewLangSmith]);
//   - the JSON-lines file when HARNESSX_TRACES_FILE is set, or [WithFile]
//     or [WithFileWriter] is given (see [NewFile]);
//   - stdout when [WithStdoutWriter] is given (or OTEL_TRACES_EXPORTER
//     says console).
//
// When none is named, spans go to the file .harnessx/traces.jsonl (the
// offline default), so traces are never silently discarded.
//
// OTEL_TRACES_EXPORTER, when set, chooses instead: a comma-separated list
// of "otlp", "langsmith", "file", "console" (or "stdout") and "none" (no
// backend: spans are discarded). An unknown name is [ErrUnknownExporter].
//
// FromEnv logs one line per backend at Info level through the provider's
// logger ([WithLogger], default slog.Default()) saying where the spans go,
// and for the file how to view it with flightrec.
//
// Shutting the provider down flushes every backend.
func FromEnv(ctx context.Context, opts ...Option) (*Provider, error) {
	c, err := newConfig(bFromEnv, opts)
	if err != nil {
		return nil, err
	}
	names, err := selectBackends(&c)
	if err != nil {
		return nil, err
	}
	specs, err := buildAll(names, func(name string) (backendSpec, error) {
		switch name {
		case "otlp":
			return otlpBackend(ctx, &c)
		case "langsmith":
			return langSmithBackend(ctx, &c)
		case "file":
			return fileBackend(ctx, &c)
		default:
			return stdoutBackend(&c)
		}
	}, func(s backendSpec) error { return s.exporter.Shutdown(ctx) })
	if err != nil {
		return nil, err
	}
	p, err := newProvider(ctx, &c, specs)
	if err != nil {
		return nil, err
	}
	announce(c.logger, p.Backends())
	return p, nil
}

// flightrecInstall says how to get the flightrec command, as the README
// does: the module is not on the Go module proxy, so from a clone.
const flightrecInstall = "in a clone of github.com/harnessx/harnessx: go install ./cmd/flightrec"

// announce says once, at Info level, where the spans of a provider built
// by FromEnv go and how to look at them, so that a file appearing in the
// working directory is never a surprise.
func announce(l *slog.Logger, backends []Backend) {
	if len(backends) == 0 {
		l.Info("exporters: spans are discarded (OTEL_TRACES_EXPORTER=none)")
		return
	}
	for _, b := range backends {
		switch b.Name {
		case "file":
			l.Info("exporters: spans go to a local file", "file", b.Target,
				"view", "flightrec runs --traces "+b.Target+"; flightrec ui --traces "+b.Target,
				"install", flightrecInstall)
		case "otlp":
			l.Info("exporters: spans go to an OTLP/HTTP endpoint", "url", b.Target)
		case "langsmith":
			l.Info("exporters: spans go to LangSmith", "url", b.Target)
		default:
			l.Info("exporters: spans go to "+b.Name, "target", b.Target)
		}
	}
}

// selectBackends returns the backends FromEnv builds, in a fixed order.
func selectBackends(c *config) ([]string, error) {
	if v := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); v != "" {
		return exporterList("OTEL_TRACES_EXPORTER", v, "otlp", "langsmith", "file", "stdout")
	}
	var names []string
	if c.endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		names = append(names, "otlp")
	}
	if c.lsAPIKey != "" || strings.TrimSpace(os.Getenv("LANGSMITH_API_KEY")) != "" {
		names = append(names, "langsmith")
	}
	if c.filePath != "" || c.fileWriter != nil || strings.TrimSpace(os.Getenv("HARNESSX_TRACES_FILE")) != "" {
		names = append(names, "file")
	}
	if c.stdoutWriter != nil {
		names = append(names, "stdout")
	}
	if len(names) == 0 {
		names = append(names, "file")
	}
	return names, nil
}

// buildAll builds the backend of each name, in order; when one fails it
// shuts down those built already and returns the error. FromEnv and
// MetersFromEnv share it.
func buildAll[S any](names []string, build func(name string) (S, error), shutdown func(S) error) ([]S, error) {
	var specs []S
	for _, name := range names {
		spec, err := build(name)
		if err != nil {
			for _, s := range specs {
				_ = shutdown(s)
			}
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// exporterList parses the value v of an OTEL_*_EXPORTER variable: a
// comma-separated list of the backend names allowed, "console" for
// "stdout", "none" and empty entries skipped, each name once, in order.
func exporterList(variable, v string, allowed ...string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "", "none":
			continue
		case "console":
			n = "stdout"
		}
		if !slices.Contains(allowed, n) {
			want := strings.ReplaceAll(strings.Join(allowed, ", "), "stdout", "console")
			return nil, fmt.Errorf("%w: %q in %s (want %s or none)", ErrUnknownExporter, n, variable, want)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// Environment variables that turn tail sampling on (see [WithTailSampling]).
const (
	// EnvTailSampling, when set to a probability in [0, 1], puts a
	// [TailSampler] keeping that share of ordinary traces in front of the
	// backends of every builder; "off" or empty leaves it out.
	EnvTailSampling = "HARNESSX_TAIL_SAMPLING"
	// EnvTailSamplingLatency sets the sampler's latency threshold as a Go
	// duration ("30s"; "0" turns the rule off). It is read only when
	// EnvTailSampling turns the sampler on.
	EnvTailSamplingLatency = "HARNESSX_TAIL_SAMPLING_LATENCY"
)

// tailSettings returns the tail sampler's options: those of
// WithTailSampling, else those the environment gives.
func tailSettings(c *config) ([]TailOption, bool, error) {
	if c.tailSet {
		return c.tailOpts, true, nil
	}
	v := strings.TrimSpace(os.Getenv(EnvTailSampling))
	if v == "" || strings.EqualFold(v, "off") {
		return nil, false, nil
	}
	p, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s=%q is not a probability in [0, 1]", ErrInvalidTailSampling, EnvTailSampling, v)
	}
	opts := []TailOption{WithKeepProbability(p)}
	if l := strings.TrimSpace(os.Getenv(EnvTailSamplingLatency)); l != "" {
		d, err := time.ParseDuration(l)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s=%q is not a duration: %v", ErrInvalidTailSampling, EnvTailSamplingLatency, l, err)
		}
		opts = append(opts, WithLatencyThreshold(d))
	}
	return opts, true, nil
}
