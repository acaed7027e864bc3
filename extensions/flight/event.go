package flight

import (
	"encoding/hex"

	"encoding/json"
	"errors"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/jsonenc"
	"go.opentelemetry.io/otel/trace"
	"strconv"
	"time"
	"unicode/utf8"
)

// Kind names what an [Event] records.
type Kind string

// The kinds of recorded events.
const (
	KindRunStart       Kind = "run_start"       // a run began: Text is the user message
	KindRunEnd         Kind = "run_end"         // a run ended: Status, usage, Error
	KindModelRequest   Kind = "model_request"   // a model request was sent
	KindModelResponse  Kind = "model_response"  // the provider answered (or failed: Error)
	KindToolCall       Kind = "tool_call"       // a tool call entered the pipeline: Text is its input
	KindToolResult     Kind = "tool_result"     // a tool call ended: Status, Duration, Text is a preview
	KindApproval       Kind = "approval"        // a tool call waits for approval
	KindError          Kind = "error"           // an error ended a run or a step
	KindHookFailed     Kind = "hook_failed"     // a hook returned an error or panicked
	KindExtensionError Kind = "extension_error" // an extension failed (a *harness.ExtensionError)
	KindIncident       Kind = "incident"        // an incident bundle was written: Path, Reason
	KindRecovered      Kind = "recovered"       // a durable runtime executes the run again after a crash: Attempt
)

// Event is one recorded fact. It is also the JSON line of the journal and
// of a bundle's events.jsonl. Fields an event does not use are empty.
type Event struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Kind      Kind      `json:"kind"`
	Agent     string    `json:"agent,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	// Ref is set on a journal line that leaves out its run ID and trace
	// ID: they are those of the line numbered Ref, an earlier line of the
	// same process ([ReadJournal] puts them back and clears Ref). An
	// event whose Ref could not be resolved (that line was lost or
	// deleted) keeps it, without run or trace ID.
	Ref  uint64 `json:"ref,omitempty"`
	Step int    `json:"step,omitempty"`
	// Attempt counts the executions of a recovered run from 1 (recovered,
	// and the run_start that follows it); empty for a first execution.
	Attempt int    `json:"attempt,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`

	// Status is the run status (run_end) or the tool status (tool_result).
	Status string `json:"status,omitempty"`
	// Duration is what the model request or tool call took.
	Duration time.Duration `json:"duration_ns,omitempty"`

	Model      string `json:"model,omitempty"`
	Provider   string `json:"provider,omitempty"`
	ResponseID string `json:"response_id,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// Messages is the number of messages a model request sent.
	Messages int `json:"messages,omitempty"`
	// Prefix is the request's prompt-cache prefix key (hex).
	Prefix string `json:"prefix,omitempty"`

	InputTokens         int64 `json:"input_tokens,omitempty"`
	OutputTokens        int64 `json:"output_tokens,omitempty"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
	ReasoningTokens     int64 `json:"reasoning_tokens,omitempty"`

	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`

	// Text is the event's text, redacted and cut to the preview size: the
	// user message, the final text, a tool's input or result, an approval
	// reason.
	Text string `json:"text,omitempty"`
	// Size is the size in bytes of the whole text before it was cut.
	Size int `json:"size,omitempty"`
	// Truncated says that Text is a prefix of the text.
	Truncated bool `json:"truncated,omitempty"`
	// Parts names the media parts with inline bytes that the event saw,
	// by reference, never by their bytes: those of the messages a model
	// request sent that no earlier event of the run named (the user
	// message's among them), those of a model response, and those of a
	// tool result.
	Parts []PartRef `json:"parts,omitempty"`

	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	// Extension names the failed extension (extension_error).
	Extension string `json:"extension,omitempty"`
	// Op is the failed extension operation (extension_error).
	Op string `json:"op,omitempty"`
	// FailedEvent names the event whose hook failed (hook_failed).
	FailedEvent string `json:"failed_event,omitempty"`

	// Reason and Path describe an incident bundle (incident).
	Reason string `json:"reason,omitempty"`
	Path   string `json:"path,omitempty"`

	// The recorder's hot path keeps IDs raw and encodes them directly:
	// tid and sid are the trace and span ID of the event's span context
	// when it is valid, zero when not (see setSpan).
	tid       trace.TraceID
	sid       trace.SpanID
	prefix    harness.Hash
	hasPrefix bool
}

// setSpan keeps the trace and span ID of sc, when sc is valid. Event
// keeps the two IDs, not sc: a SpanContext is 64 bytes, which its
// value-receiver methods copy at each call.
func (e *Event) setSpan(sc trace.SpanContext) {
	if sc.IsValid() {
		e.tid, e.sid = sc.TraceID(), sc.SpanID()
	}
}

// IsFailure reports whether e records a failure: an error, a failed or
// cancelled run, a failing hook or extension, a model error, or a tool
// result other than ok or pending.
func (e *Event) IsFailure() bool {
	switch e.Kind {
	case KindError, KindHookFailed, KindExtensionError:
		return true
	case KindRunEnd:
		return e.Status == "failed" || e.Status == "cancelled"
	case KindModelResponse:
		return e.Error != ""
	case KindToolResult:
		return e.Status != "" && e.Status != "ok" && e.Status != "pending_approval"
	}
	return false
}

// AppendJSON appends e's JSON line (with the newline) to dst, as a
// bundle's events.jsonl holds it: the keys of encoding/json with Event's
// struct tags, in their order, and every text field passed through red
// (when not nil). [ParseEvent] decodes it.
func (e *Event) AppendJSON(dst []byte, red *Redactor) []byte { return appendEvent(dst, e, red) }

// appendEvent is [Event.AppendJSON]. Bundles (events.jsonl) hold these
// lines; the recorder's ring and journal hold binary ones
// (appendEventBin).
func appendEvent(dst []byte, e *Event, red *Redactor) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	if k := kindJSON(e.Kind); k != "" {
		dst = append(dst, k...)
	} else {
		dst = append(dst, '"')
		dst = append(dst, `,"kind":`...)
		dst = jsonenc.AppendString(dst, string(e.Kind))
	}
	dst = appendStr(dst, `,"agent":`, e.Agent, nil)
	dst = appendStr(dst, `,"session_id":`, e.SessionID, nil)
	dst = appendStr(dst, `,"run_id":`, e.RunID, nil)
	if e.Ref != 0 {
		dst = append(dst, `,"ref":`...)
		dst = strconv.AppendUint(dst, e.Ref, 10)
	}
	dst = appendInt(dst, `,"step":`, int64(e.Step))
	dst = appendInt(dst, `,"attempt":`, int64(e.Attempt))
	if e.TraceID == "" && e.tid.IsValid() {
		dst = append(dst, `,"trace_id":"`...)
		dst = hex.AppendEncode(dst, e.tid[:])
		dst = append(dst, `","span_id":"`...)
		dst = hex.AppendEncode(dst, e.sid[:])
		dst = append(dst, '"')
	} else {
		dst = appendStr(dst, `,"trace_id":`, e.TraceID, nil)
		dst = appendStr(dst, `,"span_id":`, e.SpanID, nil)
	}
	dst = appendStr(dst, `,"status":`, e.Status, nil)
	dst = appendInt(dst, `,"duration_ns":`, int64(e.Duration))
	dst = appendStr(dst, `,"model":`, e.Model, red)
	dst = appendStr(dst, `,"provider":`, e.Provider, red)
	dst = appendStr(dst, `,"response_id":`, e.ResponseID, red)
	dst = appendStr(dst, `,"stop_reason":`, e.StopReason, red)
	dst = appendInt(dst, `,"messages":`, int64(e.Messages))
	if e.Prefix == "" && e.hasPrefix {
		dst = append(dst, `,"prefix":"`...)
		dst = hex.AppendEncode(dst, e.prefix[:])
		dst = append(dst, '"')
	} else {
		dst = appendStr(dst, `,"prefix":`, e.Prefix, nil)
	}
	dst = appendInt(dst, `,"input_tokens":`, e.InputTokens)
	dst = appendInt(dst, `,"output_tokens":`, e.OutputTokens)
	dst = appendInt(dst, `,"cache_read_tokens":`, e.CacheReadTokens)
	dst = appendInt(dst, `,"cache_creation_tokens":`, e.CacheCreationTokens)
	dst = appendInt(dst, `,"reasoning_tokens":`, e.ReasoningTokens)
	dst = appendStr(dst, `,"tool":`, e.Tool, red)
	dst = appendStr(dst, `,"call_id":`, e.CallID, red)
	dst = appendStr(dst, `,"text":`, e.Text, red)
	dst = appendInt(dst, `,"size":`, int64(e.Size))
	if e.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	if len(e.Parts) > 0 {
		dst = appendParts(dst, e.Parts, red)
	}
	dst = appendStr(dst, `,"error":`, e.Error, red)
	dst = appendStr(dst, `,"error_type":`, e.ErrorType, nil)
	dst = appendStr(dst, `,"extension":`, e.Extension, red)
	dst = appendStr(dst, `,"op":`, e.Op, nil)
	dst = appendStr(dst, `,"failed_event":`, e.FailedEvent, nil)
	dst = appendStr(dst, `,"reason":`, e.Reason, red)
	dst = appendStr(dst, `,"path":`, e.Path, red)
	return append(dst, "}\n"...)
}

// encCache keeps what the recorder's consecutive events share, so that
// its hot path (appendEventBin) does the work once: the redacted
// encodings of the short fields that repeat, and what the next line
// leaves out. The zero value is ready; it is not safe for concurrent
// use.
type encCache struct {
	// form is what the next line encoded through the cache leaves out:
	// the recorder sets it before each line (see Extension.record).
	form lineForm
	// fields holds the redacted encodings of the last two values of each
	// of the short fields that repeat from event to event (by field*),
	// when fieldsOK: the redactor's result depends on the text alone.
	// Two, because a field often alternates between two values: the
	// stop reason of a run's tool call and of its answer, the status of
	// a tool result and of the run's end. fieldNext says which of a
	// field's two entries a new value replaces.
	fields    [numFields][2]fieldEnc
	fieldNext [numFields]uint8
	fieldsOK  bool
}

// The fields of encCache.fields: values that recur across the events of
// an agent (a kind other than the recorder's, the model, the tool, the
// call ID of a tool call and its result, …).
const (
	fieldKind = iota
	fieldStatus
	fieldModel
	fieldProvider
	fieldStopReason
	fieldTool
	fieldCallID
	numFields
)

// fieldEnc is the encoding, field tag included, of a recent value of one
// field (redacted): an equal value is appended without being redacted
// again. The value is kept as a copy, never as the string it came in: a
// view of bytes that change later (bytesView) must not make a later,
// different value look equal.
type fieldEnc struct {
	val [fieldEncMax]byte
	n   int
	enc []byte // empty: none yet
}

// fieldEncMax bounds the values encCache keeps encoded: longer ones are
// rarely repeated.
const fieldEncMax = 64

// newEncCache returns a cache for events redacted by red.
func newEncCache(red *Redactor) encCache {
	return encCache{fieldsOK: red == nil || red.r.Deterministic()}
}

// lineForm is what a recorder's line leaves out because its reader knows
// it without the line (see ReadJournal and journalReader): the ring and
// the journal hold the same short lines.
type lineForm struct {
	// bare: the agent and session ID are the recording's, left out.
	bare bool
	// ref, when not 0, is the seq of an earlier line that carries the
	// same run ID and trace ID: the line leaves them out and names that
	// line instead.
	ref uint64
}

// lineForm returns what the line being encoded leaves out (nothing
// without a cache).
func (c *encCache) lineForm() lineForm {
	if c == nil {
		return lineForm{}
	}
	return c.form
}

// kindJSON returns the encoding of the kind k, from the closing quote of
// the time before it, for the recorder's own kinds; "" for another. The
// kind changes from one event to the next, so a cache of the last one
// (encCache.fields) would encode it at every event.
func kindJSON(k Kind) string {
	switch k {
	case KindRunStart:
		return `","kind":"run_start"`
	case KindRunEnd:
		return `","kind":"run_end"`
	case KindModelRequest:
		return `","kind":"model_request"`
	case KindModelResponse:
		return `","kind":"model_response"`
	case KindToolCall:
		return `","kind":"tool_call"`
	case KindToolResult:
		return `","kind":"tool_result"`
	case KindApproval:
		return `","kind":"approval"`
	case KindError:
		return `","kind":"error"`
	case KindHookFailed:
		return `","kind":"hook_failed"`
	case KindExtensionError:
		return `","kind":"extension_error"`
	case KindIncident:
		return `","kind":"incident"`
	case KindRecovered:
		return `","kind":"recovered"`
	}
	return ""
}

// appendStr appends key and s, redacted by red (when not nil) and
// escaped, unless s is empty. Most of an event's fields are empty: the
// test is inlined into the caller, the work is not.
func appendStr(dst []byte, key, s string, red *Redactor) []byte {
	if s == "" {
		return dst
	}
	return appendStrValue(dst, key, s, red)
}

func appendStrValue(dst []byte, key, s string, red *Redactor) []byte {
	if red != nil {
		s = red.String(s)
	}
	dst = append(dst, key...)
	return jsonenc.AppendString(dst, s)
}

func appendInt(dst []byte, key string, n int64) []byte {
	if n == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendInt(dst, n, 10)
}

// ParseEvent decodes one journal or events.jsonl line as it is, binary
// (see the package documentation) or JSON: a
// journal line may leave out the agent, session, run and trace IDs that
// [ReadJournal] puts back (see Recording in the package documentation).
// It decodes the lines the recorder writes without reflection and falls
// back to encoding/json for anything else, with the same result. An
// event must have a kind.
func ParseEvent(line []byte) (Event, error) {
	var e Event
	if isBinLine(line) {
		if err := parseBin(line, &e); err != nil {
			return Event{}, err
		}
	} else if !parseFast(line, &e) {
		e = Event{}
		if err := json.Unmarshal(line, &e); err != nil {
			return e, err
		}
	}
	if e.Kind == "" {
		return e, errNoKind
	}
	return e, nil
}

var errNoKind = errors.New("flight: event has no kind")

// cutText returns s cut to at most n bytes on a rune boundary, and
// whether it was cut.
func cutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

func durationOf(ns int64) time.Duration { return time.Duration(ns) }
