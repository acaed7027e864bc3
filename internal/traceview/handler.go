package traceview

import (
	"embed"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessx/harnessx/extensions/flight"
)

//go:embed assets
var assets embed.FS

// DefaultMaxAttrBytes is the default cap on one attribute value sent to
// the page.
const DefaultMaxAttrBytes = 64 << 10

// maxIncidentEvents caps the events of one incident sent to the page.
const maxIncidentEvents = 10000

// The run list's page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// HandlerOptions configures [Handler]. The zero value serves nothing but
// an empty page.
type HandlerOptions struct {
	// Sources are read again whenever their files change.
	Sources Sources
	// MaxAttrBytes caps each attribute value (and status message) the API
	// sends; longer values are cut at a character boundary and their full
	// size is reported. Default DefaultMaxAttrBytes.
	MaxAttrBytes int
	// AnyHost accepts requests for any Host. By default only loopback
	// hosts (localhost, 127.0.0.0/8, ::1) are served, so that a web page
	// elsewhere cannot read the traces through DNS rebinding.
	AnyHost bool
	// Logger receives request failures; default slog.Default().
	Logger *slog.Logger
}

// contentSecurityPolicy allows the page's own script and style only: no
// inline script or style, no framing, no other origin.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler returns the viewer's web page and its JSON API:
//
//	GET /                              the page (index.html, app.js, style.css)
//	GET /api/runs[?offset=N&limit=N]   a page of runs (summaries), newest first;
//	                                   incidents, problems
//	GET /api/runs/{key}                one run's spans with their attributes,
//	                                   and the incident bundles of the run
//	GET /api/incidents/{recording}/{name}  a bundle's facts, files and events
//	GET /parts/sha256-{hex}[?type=MIME]    a media part's bytes (see below)
//
// The trace files are indexed once and then as they grow (see [Index]):
// the run list comes from the index, and a run's spans are read from the
// lines that hold them. A page of runs has limit runs (default
// DefaultPageSize, at most MaxPageSize) from offset, counted from the
// newest; the answer says the total.
//
// Every response carries a strict Content-Security-Policy and
// X-Content-Type-Options: nosniff. The handler is safe for concurrent use.
//
// A media part is served by the SHA-256 of its bytes, from a recording's
// copy (<recording>/parts/sha256-<hex>) or an incident bundle's member
// under the flight directories, after checking the bytes against the
// digest. With type image/png, image/jpeg, image/gif or image/webp, and
// bytes whose sniffed type (http.DetectContentType) is that type, it is
// served as that type; with one of those types and other bytes the answer
// is 415; with any other type (image/svg+xml included) or none it is
// served as application/octet-stream with Content-Disposition: attachment.
// Parts carry their own policy: default-src 'none'; img-src 'self';
// sandbox.
func Handler(opts HandlerOptions) http.Handler {
	if opts.MaxAttrBytes <= 0 {
		opts.MaxAttrBytes = DefaultMaxAttrBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &handler{opts: opts, index: NewIndex(opts.Sources)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.asset("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", h.asset("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /style.css", h.asset("style.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /api/runs", h.runs)
	mux.HandleFunc("GET /api/runs/{key}", h.run)
	mux.HandleFunc("GET /api/incidents/{recording}/{name}", h.incident)
	mux.HandleFunc("GET /parts/{name}", h.part)
	return h.secure(mux)
}

type handler struct {
	opts  HandlerOptions
	index *Index
}

func (h *handler) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		if !h.opts.AnyHost && !loopbackHost(r.Host) {
			http.Error(w, "traceview: host not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether the Host header names this machine by a
// loopback address or localhost.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h *handler) asset(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(data)
	}
}

func (h *handler) json(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		h.opts.Logger.Warn("traceview: writing a response", "path", r.URL.Path, "err", err)
	}
}

// runJSON is a run in the run list.
type runJSON struct {
	Key        string  `json:"key"`
	ID         string  `json:"id"`
	TraceID    string  `json:"trace_id"`
	Name       string  `json:"name"`
	DurationMS float64 `json:"duration_ms"`
	Summary
}

func newRunJSON(r *RunInfo) runJSON {
	return runJSON{Key: r.Key, ID: r.ID, TraceID: r.TraceID, Name: r.Name, DurationMS: millis(r.Summary.Duration), Summary: r.Summary}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// intParam reads a non-negative integer query parameter, def when absent
// or not one.
func intParam(r *http.Request, name string, def int) int {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil || n < 0 {
		return def
	}
	return n
}

func (h *handler) runs(w http.ResponseWriter, r *http.Request) {
	cat := h.index.Catalog()
	limit := min(max(intParam(r, "limit", DefaultPageSize), 1), MaxPageSize)
	offset := min(intParam(r, "offset", 0), len(cat.Runs))
	out := struct {
		Runs      []runJSON  `json:"runs"`
		Total     int        `json:"total"`
		Offset    int        `json:"offset"`
		Limit     int        `json:"limit"`
		Incidents []Incident `json:"incidents"`
		Problems  []string   `json:"problems"`
	}{Runs: []runJSON{}, Total: len(cat.Runs), Offset: offset, Limit: limit, Incidents: []Incident{}, Problems: []string{}}
	for i := len(cat.Runs) - 1 - offset; i >= 0 && len(out.Runs) < limit; i-- { // newest first
		out.Runs = append(out.Runs, newRunJSON(cat.Runs[i]))
	}
	for i := len(cat.Incidents) - 1; i >= 0; i-- {
		inc := cat.Incidents[i]
		inc.Path = "" // the page needs no local path
		out.Incidents = append(out.Incidents, inc)
	}
	out.Problems = append(out.Problems, cat.Problems...)
	h.json(w, r, out)
}

// valueJSON is an attribute value cut to the cap.
type valueJSON struct {
	Key       string `json:"key"`
	Type      string `json:"type"`
	Value     string `json:"value"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
}

type eventJSON struct {
	Name     string      `json:"name"`
	OffsetMS float64     `json:"offset_ms"`
	Attrs    []valueJSON `json:"attrs"`
}

type spanJSON struct {
	SpanID    string  `json:"span_id"`
	ParentID  string  `json:"parent_id"`
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Operation string  `json:"operation"`
	Depth     int     `json:"depth"`
	OffsetMS  float64 `json:"offset_ms"`
	// Status is "ok" or "error" (a span that records an error);
	// StatusCode is the OTel status code (unset, ok, error).
	DurationMS    float64     `json:"duration_ms"`
	Status        string      `json:"status"`
	StatusCode    string      `json:"status_code"`
	StatusMessage valueJSON   `json:"status_message"`
	Failed        bool        `json:"failed"`
	ErrorLabel    string      `json:"error_label,omitempty"`
	Service       string      `json:"service"`
	Usage         *Usage      `json:"usage,omitempty"`
	Cost          string      `json:"cost,omitempty"`
	Attrs         []valueJSON `json:"attrs"`
	Events        []eventJSON `json:"events"`
}

func (h *handler) value(key string, v Value) valueJSON {
	s := v.String()
	out := valueJSON{Key: key, Type: string(v.Type), Value: s, Size: len(s)}
	if len(s) > h.opts.MaxAttrBytes {
		n := h.opts.MaxAttrBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		out.Value, out.Truncated = s[:n], true
	}
	if !utf8.ValidString(out.Value) {
		out.Value = strings.ToValidUTF8(out.Value, "\uFFFD")
	}
	return out
}

func (h *handler) attrs(as Attrs) []valueJSON {
	out := make([]valueJSON, 0, len(as))
	for _, a := range as {
		out = append(out, h.value(a.Key, a.Value))
	}
	return out
}

// incidentRef names an incident bundle for a link.
type incidentRef struct {
	Recording string `json:"recording"`
	Name      string `json:"name"`
	Reason    string `json:"reason,omitempty"`
}

func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	cat := h.index.Catalog()
	info, ok := cat.FindRun(r.PathValue("key"))
	if !ok {
		http.Error(w, "traceview: no such run", http.StatusNotFound)
		return
	}
	run, err := cat.Run(info)
	if err != nil {
		h.opts.Logger.Warn("traceview: reading a run", "run", info.ID, "err", err)
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	out := struct {
		Run       runJSON       `json:"run"`
		Incidents []incidentRef `json:"incidents"`
		Spans     []spanJSON    `json:"spans"`
	}{Run: newRunJSON(info), Incidents: []incidentRef{}, Spans: []spanJSON{}}
	// The run as read now: the same as the index's, unless spans of it
	// arrived since.
	out.Run.Summary, out.Run.DurationMS = run.Summary, millis(run.Summary.Duration)
	for _, inc := range cat.IncidentsOf(run.ID) {
		out.Incidents = append(out.Incidents, incidentRef{Recording: inc.Recording, Name: inc.Name, Reason: inc.Reason})
	}
	t0 := run.Root.Start
	for i, s := range run.Spans {
		sj := spanJSON{
			SpanID: s.SpanID, ParentID: s.ParentID, Name: s.Name, Kind: s.Kind, Operation: s.Operation(),
			Depth: run.Depths[i], OffsetMS: millis(s.Start.Sub(t0)), DurationMS: millis(s.Duration()),
			Status: "ok", StatusCode: string(s.Status), StatusMessage: h.value("status", Value{Type: TypeString, Str: s.StatusMessage}),
			Failed: s.Failed(), Service: s.Service, Attrs: h.attrs(s.Attrs), Events: []eventJSON{},
		}
		if sj.Failed {
			sj.Status = "error"
			sj.ErrorLabel = ErrorLabel(s.Attrs.Str("error.type"), s.StatusMessage)
		}
		if u, ok := spanUsage(s); ok {
			sj.Usage = &u
		}
		if c, ok := SpanCost(s); ok {
			sj.Cost = FormatUSD(c)
		}
		for _, ev := range s.Events {
			sj.Events = append(sj.Events, eventJSON{Name: ev.Name, OffsetMS: millis(ev.Time.Sub(t0)), Attrs: h.attrs(ev.Attrs)})
		}
		out.Spans = append(out.Spans, sj)
	}
	h.json(w, r, out)
}

// runRef names a run of an incident, with its key when the viewer has
// its spans.
type runRef struct {
	ID  string `json:"id"`
	Key string `json:"key,omitempty"`
}

// fileJSON is a member of a bundle.
type fileJSON struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Note   string `json:"note,omitempty"`
}

func (h *handler) incident(w http.ResponseWriter, r *http.Request) {
	cat := h.index.Catalog()
	rec, name := r.PathValue("recording"), r.PathValue("name")
	var inc *Incident
	for i := range cat.Incidents {
		if cat.Incidents[i].Recording == rec && cat.Incidents[i].Name == name {
			inc = &cat.Incidents[i]
		}
	}
	if inc == nil {
		http.Error(w, "traceview: no such incident", http.StatusNotFound)
		return
	}
	out := struct {
		Incident  Incident         `json:"incident"`
		Runs      []runRef         `json:"runs"`
		Files     []fileJSON       `json:"files"`
		Error     string           `json:"error,omitempty"`
		Verified  bool             `json:"verified"`
		Problems  []flight.Problem `json:"problems"`
		Manifest  *flight.Manifest `json:"manifest"`
		Events    []flight.Event   `json:"events"`
		Truncated int              `json:"events_not_shown,omitempty"`
	}{Incident: *inc, Runs: []runRef{}, Files: []fileJSON{}, Problems: []flight.Problem{}, Events: []flight.Event{}}
	out.Incident.Path = ""
	ids := append([]string{}, inc.RunIDs...)
	if inc.FailedRun != "" && !slices.Contains(ids, inc.FailedRun) {
		ids = append(ids, inc.FailedRun)
	}
	for _, id := range ids {
		ref := runRef{ID: id}
		if ri, ok := cat.FindRun(id); ok {
			ref.Key = ri.Key
		}
		out.Runs = append(out.Runs, ref)
	}
	b, err := flight.ReadBundleFile(inc.Path, flight.ReadOptions{})
	if err != nil {
		out.Error = strings.TrimPrefix(err.Error(), "flight: ")
		h.json(w, r, out)
		return
	}
	out.Manifest = &b.Manifest
	out.Files = append(out.Files, fileJSON{Name: flight.ManifestName, Note: "lists the other files with their sizes and SHA-256"})
	for _, m := range b.Members {
		out.Files = append(out.Files, fileJSON{Name: m.Name, Size: m.Size, SHA256: m.SHA256})
	}
	if verr := b.Verify(); verr != nil {
		if ve, ok := verr.(*flight.VerifyError); ok {
			out.Problems = ve.Problems
		}
	} else {
		out.Verified = true
	}
	evs, err := b.Events()
	if err != nil {
		out.Error = strings.TrimPrefix(err.Error(), "flight: ")
	}
	if len(evs) > maxIncidentEvents {
		out.Truncated = len(evs) - maxIncidentEvents
		evs = evs[:maxIncidentEvents]
	}
	out.Events = append(out.Events, evs...)
	h.json(w, r, out)
}
