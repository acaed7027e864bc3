package otlpjson

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// maxLine bounds one line read by ReadLines.
const maxLine = 64 << 20

// ReadLines decodes every non-empty line of r, one export request a line
// as the file exporter writes them, with [Unmarshal]. An error names the
// line; the requests before it are returned with it.
func ReadLines(r io.Reader) ([]*coltracepb.ExportTraceServiceRequest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []*coltracepb.ExportTraceServiceRequest
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		req, err := Unmarshal(line)
		if err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("otlpjson: %w", err)
	}
	return out, nil
}

// ReadFile decodes the OTLP/JSON lines file at path (see [ReadLines]).
func ReadFile(path string) ([]*coltracepb.ExportTraceServiceRequest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("otlpjson: %w", err)
	}
	defer f.Close()
	reqs, err := ReadLines(f)
	if err != nil {
		return reqs, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}
