package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// file reads a content object with ranged GETs. A GET asks for a window
// that starts at MinReadAhead bytes after an Open or a Seek and grows
// eightfold with each sequential read up to MaxReadAhead, so a slice
// transfers about what it reads and a scan few requests; a scan from the
// start of the object becomes one GET of the whole object once the window
// reaches scanWindow. Nothing is buffered: reads go from the response body
// into the caller's slice, so memory is one response whatever the window. Every GET asks
// for the ETag seen at Open (If-Match): content replaced meanwhile fails
// the read instead of mixing two versions.
type file struct {
	s     *Store
	ctx   context.Context
	id    string
	key   string
	etag  string
	size  int64
	stamp string

	pos    int64         // the next byte Read returns
	body   io.ReadCloser // serves [bodyPos, bodyEnd)
	bodyAt int64
	bodyTo int64
	window int64 // size of the next GET
	closed bool
}

func (f *file) Stamp() string { return f.stamp }

func (f *file) Read(p []byte) (int, error) {
	if f.closed {
		return 0, errors.New("s3store: read of a closed file")
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.pos >= f.size {
		return 0, io.EOF
	}
	if f.body == nil || f.bodyAt != f.pos || f.bodyAt >= f.bodyTo {
		if err := f.fetch(int64(len(p))); err != nil {
			return 0, err
		}
	}
	want := min(int64(len(p)), f.bodyTo-f.bodyAt)
	n, err := f.body.Read(p[:want])
	f.pos += int64(n)
	f.bodyAt += int64(n)
	if errors.Is(err, io.EOF) {
		if f.bodyAt < f.bodyTo {
			f.dropBody()
			return n, f.s.wrap("reading", f.id, fmt.Errorf("response ended at byte %d of %d: %w", f.bodyAt, f.bodyTo, io.ErrUnexpectedEOF))
		}
		err = nil
	}
	if err != nil {
		f.dropBody()
		return n, f.s.wrap("reading", f.id, err)
	}
	if f.bodyAt >= f.bodyTo {
		f.dropBody()
	}
	return n, nil
}

// fetch starts a GET at pos for a read of want bytes.
func (f *file) fetch(want int64) error {
	sequential := f.window > 0 && f.bodyTo == f.pos
	f.dropBody()
	switch {
	case f.window == 0 || !sequential:
		f.window = f.s.cfg.MinReadAhead
	default:
		f.window = min(8*f.window, f.s.cfg.MaxReadAhead)
	}
	end := min(f.pos+f.window, f.size) // exclusive
	// A scan from the start (a search, a verification) reads the rest
	// in one GET of the whole object, skipping the little already read:
	// servers serve a whole object best (versitygw sends it with
	// sendfile, a range through a buffer).
	// A first read that asks for scanWindow bytes or more at once
	// announces a scan too.
	skip := int64(-1)
	if (sequential && f.window >= scanWindow || want >= scanWindow) && f.pos <= maxScanSkip && end < f.size {
		skip, end = f.pos, f.size
	}
	var opts minio.GetObjectOptions
	if skip < 0 {
		if err := opts.SetRange(f.pos, end-1); err != nil {
			return fmt.Errorf("s3store: reading %s: %w", f.id, err)
		}
	}
	if f.etag != "" {
		if err := opts.SetMatchETag(f.etag); err != nil {
			return fmt.Errorf("s3store: reading %s: %w", f.id, err)
		}
	}
	rc, _, _, err := f.s.core.GetObject(f.ctx, f.s.cfg.Bucket, f.key, opts)
	if err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("s3store: reading %s: its content object changed while it was open", f.id)
		}
		return f.s.wrap("reading", f.id, err)
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, rc, skip); err != nil {
			rc.Close()
			return f.s.wrap("reading", f.id, err)
		}
	}
	f.body, f.bodyAt, f.bodyTo = rc, f.pos, end
	return nil
}

// A sequential window of scanWindow bytes or more, or a read of as many
// bytes, within maxScanSkip bytes of the beginning becomes a GET of the
// whole object. spill's search reads 2 MiB at a time and its SHA-256
// verification 1 MiB; its slices and table reads far less.
const (
	scanWindow  = 1 << 20
	maxScanSkip = 1 << 20
)

// dropBody closes the current response. A response with little left is
// drained first, so that its connection is reused.
func (f *file) dropBody() {
	if f.body == nil {
		return
	}
	if left := f.bodyTo - f.bodyAt; left > 0 && left <= 64<<10 {
		_, _ = io.CopyN(io.Discard, f.body, left)
	}
	f.body.Close()
	f.body = nil
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, errors.New("s3store: seek on a closed file")
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.pos + offset
	case io.SeekEnd:
		abs = f.size + offset
	default:
		return 0, errors.New("s3store: seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("s3store: seek: negative position")
	}
	if abs == f.pos {
		return abs, nil
	}
	// A short skip forward within the current response reads through it.
	if f.body != nil && abs > f.pos && abs < f.bodyTo && abs-f.pos <= 64<<10 {
		n, err := io.CopyN(io.Discard, f.body, abs-f.pos)
		f.pos += n
		f.bodyAt += n
		if err == nil {
			return abs, nil
		}
	}
	f.dropBody()
	f.window = 0
	f.pos = abs
	return abs, nil
}

func (f *file) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.dropBody()
	return nil
}
