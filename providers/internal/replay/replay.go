package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
)

// Response is one recorded answer.
type Response struct {
	// Status is the HTTP status; default 200.
	Status int
	// Header holds extra response headers.
	Header map[string]string
	// ContentType defaults to text/event-stream when Body starts with
	// "event:" or "data:", and to application/json otherwise.
	ContentType string
	// Body is written as is. A body that stops mid-stream models a cut
	// connection: the server ends the response after it.
	Body []byte
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server answers with its script, one response per request. A request past
// the end of the script gets a 500 with an error body naming the problem.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []Response
	next     int
	requests []Request
}

// New starts a server on the loopback interface. Call Close when done.
func New(script ...Response) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL returns the server's base URL, e.g. http://127.0.0.1:1234/.
func (s *Server) URL() string { return s.srv.URL + "/" }

// Client returns an HTTP client for the server; its connections close with
// the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close shuts the server down and waits for running requests.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var resp Response
	ok := s.next < len(s.script)
	if ok {
		resp = s.script[s.next]
		s.next++
	}
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"error":{"type":"replay_error","message":"replay: no response recorded for request %d"}}`, len(s.requests))
		return
	}
	ct := resp.ContentType
	if ct == "" {
		ct = "application/json"
		if bytes.HasPrefix(resp.Body, []byte("event:")) || bytes.HasPrefix(resp.Body, []byte("data:")) {
			ct = "text/event-stream"
		}
	}
	w.Header().Set("Content-Type", ct)
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

// File returns a 200 response whose body is the file at path. It panics if
// the file cannot be read: it is for tests and examples.
func File(path string) Response {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("replay: %v", err))
	}
	return Response{Body: b}
}

// Status returns a response with the given status and JSON body.
func Status(status int, body string, header map[string]string) Response {
	return Response{Status: status, Body: []byte(body), Header: header}
}

// Indent returns body indented with two spaces, for golden files that
// people can read; the content and key order are unchanged.
func Indent(body []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Truncate returns body up to the start of the first line holding marker
// (all of body when marker is absent). It models a connection cut
// mid-message. The result is a copy.
func Truncate(body []byte, marker string) []byte {
	i := bytes.Index(body, []byte(marker))
	if i < 0 {
		return bytes.Clone(body)
	}
	j := strings.LastIndexByte(string(body[:i]), '\n')
	return bytes.Clone(body[:j+1])
}
