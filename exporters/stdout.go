package exporters

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
)

// NewStdout returns a provider that writes spans to standard output (or
// the [WithStdoutWriter] writer) as JSON, one object per span, with the
// stdouttrace exporter: handy while developing. [WithPrettyPrint] indents
// them.
func NewStdout(ctx context.Context, opts ...Option) (*Provider, error) {
	c, err := newConfig(bStdout, opts)
	if err != nil {
		return nil, err
	}
	spec, err := stdoutBackend(&c)
	if err != nil {
		return nil, err
	}
	return newProvider(ctx, &c, []backendSpec{spec})
}

func stdoutBackend(c *config) (backendSpec, error) {
	var opts []stdouttrace.Option
	if c.stdoutWriter != nil {
		opts = append(opts, stdouttrace.WithWriter(c.stdoutWriter))
	}
	if c.prettyPrint {
		opts = append(opts, stdouttrace.WithPrettyPrint())
	}
	exp, err := stdouttrace.New(opts...)
	if err != nil {
		return backendSpec{}, fmt.Errorf("exporters: stdout: %w", err)
	}
	return backendSpec{Backend{Name: "stdout", Target: "stdout"}, exp}, nil
}
