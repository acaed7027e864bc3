package recording

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Files of a recording directory besides the journal segments.
const (
	InfoName           = "recording.json" // Info
	SessionSnapshot    = "session.json"   // latest Agent.SaveSession, redacted
	SpansSnapshot      = "spans.json"     // buffered spans at the last compaction, OTLP JSON, redacted
	SpansLog           = "spans.jsonl"    // spans ended since, one OTLP JSON request a line, redacted
	ArtifactsIndexName = "artifacts.json" // the artifact index
	IncidentsDir       = "incidents"      // incident bundles
)

// Info is the content of recording.json.
type Info struct {
	Format string `json:"format"`
	// Version is the recording's format: 1 for journals of JSON lines
	// (segments seg-N.jsonl), 2 for binary event lines (seg-N.events).
	// Every line says which it is, so a reader needs no version to read
	// either, nor a directory whose segments mix them.
	Version   int       `json:"version"`
	Agent     string    `json:"agent"`
	SessionID string    `json:"session_id"`
	Created   time.Time `json:"created"`
	PID       int       `json:"pid"`
}

// ReadInfo reads recording.json of the recording directory dir.
func ReadInfo(dir string) (*Info, error) {
	data, err := os.ReadFile(filepath.Join(dir, InfoName))
	if err != nil {
		return nil, fmt.Errorf("flight: %w", err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("flight: %s: %w", InfoName, err)
	}
	return &info, nil
}
