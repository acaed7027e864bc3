package exporters

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by the builders and the provider.
var (
	// ErrNoAPIKey is returned by [NewLangSmith] when neither [WithAPIKey] nor
	// LANGSMITH_API_KEY gives an API key.
	ErrNoAPIKey = errors.New("exporters: no LangSmith API key (set LANGSMITH_API_KEY or use WithAPIKey)")
	// ErrInvalidEndpoint is returned when an endpoint is not an absolute
	// http or https URL.
	ErrInvalidEndpoint = errors.New("exporters: invalid endpoint")
	// ErrUnknownExporter is returned by [FromEnv] for a name in
	// OTEL_TRACES_EXPORTER that it does not know.
	ErrUnknownExporter = errors.New("exporters: unknown exporter")
	// ErrOptionNotApplicable is matched (errors.Is) by the error a builder
	// returns when given an option that does not apply to it, such as
	// [WithFile] given to [NewOTLP]; the error names the option and the
	// builders it applies to.
	ErrOptionNotApplicable = errors.New("exporters: option does not apply to this builder")
	// ErrSpansLost is wrapped by the [*LossError] that [Provider.ForceFlush]
	// and [Provider.Shutdown] return when spans did not reach a backend.
	ErrSpansLost = errors.New("exporters: spans lost")
)

// LossError says how many spans a backend lost. It wraps [ErrSpansLost].
type LossError struct {
	// Backend names the backend ("otlp", "langsmith", "file", "stdout").
	Backend string
	// Failed counts spans in batches the backend did not accept.
	Failed int64
	// Dropped counts spans dropped before export: queue full or provider
	// shut down.
	Dropped int64
	// Err is the last export error, if any.
	Err error
}

// Error says which backend lost how many spans.
func (e *LossError) Error() string {
	s := fmt.Sprintf("exporters: %s lost spans: %d failed, %d dropped", e.Backend, e.Failed, e.Dropped)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrSpansLost and the last export error.
func (e *LossError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSpansLost, e.Err}
	}
	return []error{ErrSpansLost}
}
