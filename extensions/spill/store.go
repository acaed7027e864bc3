package spill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Store keeps spilled results as byte streams under result ids. Every
// method may block on I/O and must be safe for concurrent use by several
// goroutines: concurrent tool calls spill at the same time, and read_result
// calls may run in parallel with them. Operations on different ids are
// independent. Ids are always valid ([ValidID]); a Store should still
// reject anything else with [ErrInvalidID].
//
// The extension computes each result's size and SHA-256 itself while it
// streams the result into Put, and checks them when it reads, so a Store
// only moves bytes.
type Store interface {
	// Put stores everything read from r under id. It fails with ErrExists
	// if id is stored already, and should not make a partial result visible
	// to Open or List. It returns the number of bytes stored.
	Put(ctx context.Context, id string, r io.Reader) (int64, error)
	// Open opens the result for reading. Errors for a missing id match
	// fs.ErrNotExist.
	Open(ctx context.Context, id string) (File, error)
	// Stat describes the stored result. Errors for a missing id match
	// fs.ErrNotExist.
	Stat(ctx context.Context, id string) (Info, error)
	// Delete removes the result; deleting a missing id is not an error.
	Delete(ctx context.Context, id string) error
	// List describes every stored result, in no particular order.
	List(ctx context.Context) ([]Info, error)
}

// URLer is a [Store] that hands out URLs from which anyone who holds one
// can GET a stored result's bytes, without credentials, until it expires,
// such as a presigned S3 URL (s3store implements it). The extension uses
// it to send a large media part of a tool result to the model's provider
// by URL instead of inline (see [WithPartThreshold]), so the URL must be
// one the provider can reach: a store whose URLs only its own machine or
// network reaches must not implement it (a [DirStore] does not).
type URLer interface {
	Store
	// URL returns a URL of id's bytes that works for at least expiry (a
	// store may cap it, and says so in its documentation); a GET of it
	// answers with the Content-Type contentType, when not "". It may
	// block on I/O and must be safe for concurrent use. Errors for a
	// missing id match fs.ErrNotExist.
	URL(ctx context.Context, id, contentType string, expiry time.Duration) (string, error)
}

// File is an opened stored result. It is used by one goroutine at a time.
type File interface {
	io.ReadSeekCloser
	// Stamp identifies the version of the content that is open: it changes
	// whenever the content may have changed (for a file: its inode, size,
	// modification and change times). The extension re-verifies a result's
	// SHA-256 whenever the stamp differs from the one it last verified; an
	// empty stamp means "unknown" and forces a verification on every open.
	Stamp() string
}

// Info describes a stored result.
type Info struct {
	ID   string
	Size int64
	// Path is where the result is on the local disk, or "" when the store
	// is not a directory. Artifacts need a path.
	Path string
	// Stamp is as [File.Stamp].
	Stamp string
}

// racyWindow is how long after a change a file's stamp is not trusted:
// file times advance in clock ticks, so a second write within the tick of
// a verification could keep the same times.
const racyWindow = time.Second

// PutBytes stores b under id in s.
func PutBytes(ctx context.Context, s Store, id string, b []byte) (int64, error) {
	return s.Put(ctx, id, strings.NewReader(string(b)))
}

// DirStore is a [Store] of one file per result in a directory. Every
// access goes through an [os.Root] over the directory, so no id, symbolic
// link or ".." can reach a file outside it. It is safe for concurrent use.
type DirStore struct {
	dir  string
	root *os.Root

	mu     sync.Mutex
	closed bool
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns a store over dir, creating the directory (mode 0700)
// if needed. Close it when done; closing does not remove any file.
func NewDirStore(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("spill: empty store directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("spill: store directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("spill: store directory: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("spill: store directory: %w", err)
	}
	return &DirStore{dir: abs, root: root}, nil
}

// Dir returns the store's directory, an absolute path.
func (s *DirStore) Dir() string { return s.dir }

// Close releases the directory handle. Later calls fail; Close is
// idempotent.
func (s *DirStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.root.Close()
}

func (s *DirStore) check(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w: %s", ErrInvalidID, quote(id))
	}
	return nil
}

// Put writes r to a temporary file in the directory and links it as id
// once complete, so a partial result is never visible and an existing id
// is never replaced. It checks ctx between reads.
func (s *DirStore) Put(ctx context.Context, id string, r io.Reader) (int64, error) {
	if err := s.check(id); err != nil {
		return 0, err
	}
	if _, err := s.root.Lstat(id); err == nil {
		return 0, fmt.Errorf("%w: %s", ErrExists, id)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".tmp-" + id + "-" + hex.EncodeToString(rnd[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("spill: storing %s: %w", id, err)
	}
	// Write in large pieces: the page cache keeps a file written in large
	// writes in large folios, which read back about twice as fast. (A bare
	// *os.File would take over the copy with its ReadFrom, in 32 KiB writes.)
	n, err := io.CopyBuffer(writerOnly{f}, ctxReader{ctx, r}, make([]byte, putBuffer))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Link fails if id exists, atomically; without hard links, check
		// and rename.
		if lerr := s.root.Link(tmp, id); lerr == nil {
			err = s.root.Remove(tmp)
		} else if errors.Is(lerr, fs.ErrExist) {
			err = fmt.Errorf("%w: %s", ErrExists, id)
		} else if _, serr := s.root.Lstat(id); serr == nil {
			err = fmt.Errorf("%w: %s", ErrExists, id)
		} else {
			err = s.root.Rename(tmp, id)
		}
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		if errors.Is(err, ErrExists) {
			return 0, err
		}
		return 0, fmt.Errorf("spill: storing %s: %w", id, err)
	}
	return n, nil
}

// Open opens the result's file; it must be a regular file.
func (s *DirStore) Open(_ context.Context, id string) (File, error) {
	if err := s.check(id); err != nil {
		return nil, err
	}
	f, err := s.root.Open(id)
	if err != nil {
		return nil, fmt.Errorf("spill: opening %s: %w", id, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("spill: opening %s: %w", id, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("spill: opening %s: not a regular file", id)
	}
	return &dirFile{File: f, stamp: stamp(fi)}, nil
}

type dirFile struct {
	*os.File
	stamp string
}

func (f *dirFile) Stamp() string { return f.stamp }

// Stat describes the result's file without following a symbolic link.
func (s *DirStore) Stat(_ context.Context, id string) (Info, error) {
	if err := s.check(id); err != nil {
		return Info{}, err
	}
	fi, err := s.root.Lstat(id)
	if err != nil {
		return Info{}, fmt.Errorf("spill: %s: %w", id, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("spill: %s: not a regular file", id)
	}
	return Info{ID: id, Size: fi.Size(), Path: filepath.Join(s.dir, id), Stamp: stamp(fi)}, nil
}

// Delete removes the result's file.
func (s *DirStore) Delete(_ context.Context, id string) error {
	if err := s.check(id); err != nil {
		return err
	}
	if err := s.root.Remove(id); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spill: deleting %s: %w", id, err)
	}
	return nil
}

// List describes the results in the directory, sorted by id. Files whose
// names are not result ids are ignored.
func (s *DirStore) List(ctx context.Context) ([]Info, error) {
	d, err := s.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("spill: listing: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("spill: listing: %w", err)
	}
	slices.Sort(names)
	var out []Info
	for _, n := range names {
		if !ValidID(n) {
			continue
		}
		info, err := s.Stat(ctx, n)
		if err != nil {
			continue // removed meanwhile, or not a regular file
		}
		out = append(out, info)
	}
	return out, nil
}

// putBuffer is the size of the writes of DirStore.Put.
const putBuffer = 1 << 20

// writerOnly hides every method but Write, so io.CopyBuffer uses its buffer.
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
