package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/recording"
)

// s3Support is what flightrec needs of S3: cmd/flightrec/internal/s3export
// in a build with -tags s3 (s3_on.go), nil otherwise (s3_off.go), so that
// the default build never compiles the S3 client.
type s3Support interface {
	// Export writes the bundle of the recording dir, once, to the
	// s3:// URL out, configured by the AWS_* variables of getenv.
	Export(ctx context.Context, out, dir string, opts flight.ExportOptions, getenv func(string) string) (*flight.Manifest, error)
	// Fetch copies stored results from the artifact store
	// HARNESSX_ARTIFACTS names into files under tmp.
	Fetch(ctx context.Context, results []spill.SavedResult, tmp string, getenv func(string) string) ([]harness.Artifact, []flight.MissingArtifact, error)
}

// envArtifacts names the S3 artifact store of the spill extension
// (s3store.EnvArtifacts, which this file must not import).
const envArtifacts = "HARNESSX_ARTIFACTS"

// noS3 says that this build cannot reach S3, and how to get one that can.
const noS3 = "this flightrec was built without S3 support, which keeps the S3 client out of the default build; " +
	"install one with it from a clone of harnessx: go install -tags s3 ./cmd/flightrec"

// isS3 reports an s3:// output.
func isS3(out string) bool { return strings.HasPrefix(out, "s3://") }

// remoteArtifacts fetches, from the artifact store named by
// HARNESSX_ARTIFACTS, the spilled results that the recording's session
// snapshot lists without a directory (those of a store that is not a
// directory, such as S3), into files under tmp. Results that cannot be
// fetched are returned as missing, with the reason; in a build without S3
// support, all of them. Without HARNESSX_ARTIFACTS, or without a session
// snapshot, it returns nothing.
func (a *app) remoteArtifacts(ctx context.Context, recDir, tmp string) ([]harness.Artifact, []flight.MissingArtifact, error) {
	if a.getenv(envArtifacts) == "" {
		return nil, nil, nil
	}
	results, err := sessionResults(filepath.Join(recDir, recording.SessionSnapshot))
	if err != nil || len(results) == 0 {
		return nil, nil, err
	}
	var remote []spill.SavedResult
	for _, r := range results {
		if r.Dir == "" {
			remote = append(remote, r)
		}
	}
	if len(remote) == 0 {
		return nil, nil, nil
	}
	if a.s3 == nil {
		missing := make([]flight.MissingArtifact, len(remote))
		for i, r := range remote {
			missing[i] = flight.MissingArtifact{Name: r.ArtifactName(), Reason: "in the artifact store " + envArtifacts + " names; " + noS3}
		}
		return nil, missing, nil
	}
	return a.s3.Fetch(ctx, remote, tmp, a.getenv)
}

// sessionResults reads the spill results of a session snapshot; none
// when there is no snapshot or no spill state.
func sessionResults(p string) ([]spill.SavedResult, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session snapshot: %v", pathless(err))
	}
	var sess struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if err := json.Unmarshal(data, &sess); err != nil {
		return nil, fmt.Errorf("session snapshot %s: %v", p, err)
	}
	raw, ok := sess.Extensions["spill"]
	if !ok {
		return nil, nil
	}
	return spill.SavedResults(raw)
}
