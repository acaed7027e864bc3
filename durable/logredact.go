package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harnessx/harnessx/internal/redact"
)

// redactedLogger returns l with its records passed through the built-in
// secret rules (internal/redact, as the flight recorder and the tracing
// extension apply them): DBOS logs step and workflow errors, such as a
// provider's error that quotes an API key, through the runtime's logger.
//
// While the runtime closes (closing set), an ERROR record about a
// cancelled context is logged at DEBUG: Close cancels DBOS's context, and
// DBOS's queue runner reports the query it was making ("Error dequeuing
// workflows from queue … context canceled") although nothing failed.
//
// DBOS's warning that a workflow's outcome was not recorded is logged at
// DEBUG for a run this process parked (suspend.go): the workflow function
// of a parked run returns after its row was cancelled, as parking means.
func redactedLogger(l *slog.Logger, st *logState) *slog.Logger {
	return slog.New(redactHandler{h: l.Handler(), r: redact.Builtin(), st: st})
}

// logState is what the runtime's logger knows of the runtime.
type logState struct {
	closing atomic.Bool // set when Close starts
	parking sync.Map    // the IDs of the runs this process parked, until woken
}

// parkedRun reports whether the record is about a run this process
// parked.
func (st *logState) parkedRun(rec slog.Record) bool {
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "workflow_id" {
			_, found = st.parking.Load(a.Value.String())
			return false
		}
		return true
	})
	return found
}

// redactHandler redacts a record's message and the values of its
// attributes (strings, errors, and any other value by its text) before the
// wrapped handler sees them. Numbers, booleans, times and durations pass
// as they are. Enabled is the wrapped handler's, so a record below its
// level costs nothing.
type redactHandler struct {
	h  slog.Handler
	r  *redact.Redactor
	st *logState // see redactedLogger; nil: nothing is demoted
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	level := rec.Level
	if h.st != nil && (level >= slog.LevelError && h.st.closing.Load() && cancelledAttr(rec) ||
		level == slog.LevelWarn && strings.HasPrefix(rec.Message, "Workflow outcome was not recorded") && h.st.parkedRun(rec)) {
		if level = slog.LevelDebug; !h.h.Enabled(ctx, level) {
			return nil
		}
	}
	out := slog.NewRecord(rec.Time, level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

// cancelledAttr reports whether one of the record's attributes is an
// error (or an error's text) about a cancelled context.
func cancelledAttr(rec slog.Record) bool {
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch {
		case v.Kind() == slog.KindAny:
			if err, ok := v.Any().(error); ok && (errors.Is(err, context.Canceled) || strings.Contains(err.Error(), context.Canceled.Error())) {
				found = true
			}
		case v.Kind() == slog.KindString:
			found = strings.Contains(v.String(), context.Canceled.Error())
		}
		return !found
	})
	return found
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return redactHandler{h.h.WithAttrs(red), h.r, h.st}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.h.WithGroup(name), h.r, h.st}
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Field(a.Key, v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case nil:
			return a
		case error:
			return slog.String(a.Key, h.r.Field(a.Key, x.Error()))
		default:
			return slog.String(a.Key, h.r.Field(a.Key, fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
