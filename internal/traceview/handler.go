package traceview

import (
	"embed"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
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
//	GET /api/runs                      runs (summaries), incidents, problems
//	GET /api/runs/{key}                one run's spans with their attributes
//	GET /api/incidents/{recording}/{name}  a bundle's manifest and events
//	GET /parts/sha256-{hex}[?type=MIME]    a media part's bytes (see below)
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
	h := &handler{opts: opts, cache: &cache{src: opts.Sources}}
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
	cache *cache
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

func newRunJSON(r *Run) runJSON {
	return runJSON{Key: r.Key(), ID: r.ID, TraceID: r.TraceID, Name: r.Root.Name, DurationMS: millis(r.Summary.Duration), Summary: r.Summary}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (h *handler) runs(w http.ResponseWriter, r *http.Request) {
	cat := h.cache.get()
	out := struct {
		Runs      []runJSON  `json:"runs"`
		Incidents []Incident `json:"incidents"`
		Problems  []string   `json:"problems"`
	}{Runs: []runJSON{}, Incidents: []Incident{}, Problems: []string{}}
	for i := len(cat.Runs) - 1; i >= 0; i-- { // newest first
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
	SpanID        string      `json:"span_id"`
	ParentID      string      `json:"parent_id"`
	Name          string      `json:"name"`
	Kind          string      `json:"kind"`
	Operation     string      `json:"operation"`
	Depth         int         `json:"depth"`
	OffsetMS      float64     `json:"offset_ms"`
	DurationMS    float64     `json:"duration_ms"`
	Status        string      `json:"status"`
	StatusMessage valueJSON   `json:"status_message"`
	Failed        bool        `json:"failed"`
	Service       string      `json:"service"`
	Usage         *Usage      `json:"usage,omitempty"`
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

func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	cat := h.cache.get()
	run, ok := cat.FindRun(r.PathValue("key"))
	if !ok {
		http.Error(w, "traceview: no such run", http.StatusNotFound)
		return
	}
	out := struct {
		Run   runJSON    `json:"run"`
		Spans []spanJSON `json:"spans"`
	}{Run: newRunJSON(run), Spans: []spanJSON{}}
	t0 := run.Root.Start
	for i, s := range run.Spans {
		sj := spanJSON{
			SpanID: s.SpanID, ParentID: s.ParentID, Name: s.Name, Kind: s.Kind, Operation: s.Operation(),
			Depth: run.Depths[i], OffsetMS: millis(s.Start.Sub(t0)), DurationMS: millis(s.Duration()),
			Status: string(s.Status), StatusMessage: h.value("status", Value{Type: TypeString, Str: s.StatusMessage}),
			Failed: s.Failed(), Service: s.Service, Attrs: h.attrs(s.Attrs), Events: []eventJSON{},
		}
		if u, ok := spanUsage(s); ok {
			sj.Usage = &u
		}
		for _, ev := range s.Events {
			sj.Events = append(sj.Events, eventJSON{Name: ev.Name, OffsetMS: millis(ev.Time.Sub(t0)), Attrs: h.attrs(ev.Attrs)})
		}
		out.Spans = append(out.Spans, sj)
	}
	h.json(w, r, out)
}

func (h *handler) incident(w http.ResponseWriter, r *http.Request) {
	cat := h.cache.get()
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
		Error     string           `json:"error,omitempty"`
		Verified  bool             `json:"verified"`
		Problems  []flight.Problem `json:"problems"`
		Manifest  *flight.Manifest `json:"manifest"`
		Events    []flight.Event   `json:"events"`
		Truncated int              `json:"events_not_shown,omitempty"`
	}{Incident: *inc, Problems: []flight.Problem{}, Events: []flight.Event{}}
	out.Incident.Path = ""
	b, err := flight.ReadBundleFile(inc.Path, flight.ReadOptions{})
	if err != nil {
		out.Error = strings.TrimPrefix(err.Error(), "flight: ")
		h.json(w, r, out)
		return
	}
	out.Manifest = &b.Manifest
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
