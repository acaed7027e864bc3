package s3export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/harness"
)

// Support is the S3 support flightrec uses. The zero value is ready.
type Support struct{}

// output parses out, s3://bucket/prefix/name, into a store over
// s3://bucket/prefix, configured by the AWS_* variables of getenv, and the
// name. The store applies no retention: it only writes the bundle.
func output(out string, getenv func(string) string) (*s3store.Store, string, error) {
	bucket, key, err := s3store.ParseURL(out)
	if err != nil {
		return nil, "", err
	}
	if key == "" || strings.HasSuffix(out, "/") {
		return nil, "", fmt.Errorf("%s names no object: give the bundle's name, as in s3://%s/incidents/incident.tar.gz", out, bucket)
	}
	dir, name := path.Split(key)
	cfg, err := s3store.ConfigForURL(s3store.Location(bucket, strings.TrimSuffix(dir, "/")), getenv)
	if err != nil {
		return nil, "", err
	}
	cfg.Retention = s3store.Retention{}
	st, err := s3store.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return st, name, nil
}

// Export builds the bundle of the recording dir into a temporary file and
// writes it once to the s3:// URL out: an existing object is not
// replaced.
func (Support) Export(ctx context.Context, out, dir string, opts flight.ExportOptions, getenv func(string) string) (*flight.Manifest, error) {
	st, name, err := output(out, getenv)
	if err != nil {
		return nil, err
	}
	defer st.Close(ctx)
	f, err := os.CreateTemp("", "flightrec-export-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("cannot write a temporary bundle: %v", pathless(err))
	}
	defer os.Remove(f.Name())
	defer f.Close()
	m, err := flight.ExportJournal(ctx, dir, f, opts)
	if err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := st.WriteObject(ctx, name, f, size); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cannot write %s: it exists already (bundles are written once)", out)
		}
		return nil, fmt.Errorf("cannot write %s: %v", out, err)
	}
	return m, nil
}

// Fetch copies the results, spilled to the artifact store that
// HARNESSX_ARTIFACTS names (with the AWS_* variables of getenv), into
// files under tmp. Results that cannot be fetched are returned as
// missing, with the reason.
func (Support) Fetch(ctx context.Context, results []spill.SavedResult, tmp string, getenv func(string) string) ([]harness.Artifact, []flight.MissingArtifact, error) {
	cfg, err := s3store.ConfigFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	cfg.Retention = s3store.Retention{} // reading only
	st, err := s3store.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close(ctx)
	var arts []harness.Artifact
	var missing []flight.MissingArtifact
	for _, r := range results {
		name := r.ArtifactName()
		p := filepath.Join(tmp, r.ID)
		if err := fetchResult(ctx, st, r, p); err != nil {
			missing = append(missing, flight.MissingArtifact{Name: name, Reason: err.Error()})
			continue
		}
		arts = append(arts, harness.Artifact{Name: name, Path: p, Size: r.Size, SHA256: r.SHA256})
	}
	return arts, missing, nil
}

// fetchResult copies a stored result into the file p, checking its size
// against the bundle's limit and its SHA-256.
func fetchResult(ctx context.Context, st *s3store.Store, r spill.SavedResult, p string) error {
	if r.Size > flight.MaxArtifactBytes {
		return fmt.Errorf("%d bytes, over the bundle's limit of %d", r.Size, flight.MaxArtifactBytes)
	}
	src, err := st.Open(ctx, r.ID)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("temporary file: %v", pathless(err))
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(src, flight.MaxArtifactBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != r.Size || got != r.SHA256 {
		return fmt.Errorf("the stored object does not match the session (%d bytes, SHA-256 %s; want %d bytes, %s)", n, got, r.Size, r.SHA256)
	}
	return nil
}

// pathless returns the cause of a path error without the path.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
