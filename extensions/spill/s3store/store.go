package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/harnessx/harnessx/extensions/spill"
)

// Errors of the store. They are wrapped with the operation and the key;
// match them with errors.Is. A missing result matches fs.ErrNotExist, an
// id stored already spill.ErrExists, as the spill.Store contract asks.
var (
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("s3store: no such bucket")
	// ErrAccessDenied: the credentials were refused (unknown access key,
	// wrong secret, or no permission).
	ErrAccessDenied = errors.New("s3store: access denied")
	// ErrUnreachable: the endpoint could not be reached or did not answer
	// as an S3 server.
	ErrUnreachable = errors.New("s3store: store unreachable")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("s3store: store is closed")
)

// Store is a spill.Store on S3-compatible storage. Build it with [New] or
// [FromEnv]; it is safe for concurrent use, and every method may block on
// the network. See the package documentation for the key layout.
type Store struct {
	cfg      Config
	core     *minio.Core
	endpoint string // host, for errors
	log      *slog.Logger
	// transport is the store's own transport (none when Config.Transport
	// was given): Close closes its idle connections.
	transport *http.Transport

	mu      sync.Mutex
	index   map[string]indexEntry // id → content, as read or written (ids are written once)
	written map[string]bool       // ids this Store wrote, for DeleteOnClose
	closed  bool
}

var _ spill.Store = (*Store)(nil)

// indexEntry is the body of an id's index object.
type indexEntry struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// New returns a store over cfg.Bucket. It does not contact the server
// (an agent starts even when the store is down; spilling then passes
// results through): call [Store.Check] to test the bucket and the
// credentials.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3store: no bucket")
	}
	cfg.Prefix = strings.Trim(cfg.Prefix, "/")
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.MinReadAhead <= 0 {
		cfg.MinReadAhead = DefaultMinReadAhead
	}
	if cfg.MaxReadAhead <= 0 {
		cfg.MaxReadAhead = DefaultMaxReadAhead
	}
	cfg.MaxReadAhead = max(cfg.MaxReadAhead, cfg.MinReadAhead)
	if cfg.SpoolMemory <= 0 {
		cfg.SpoolMemory = DefaultSpoolMemory
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Retention.MaxAge < 0 || cfg.Retention.MaxBytes < 0 {
		return nil, errors.New("s3store: negative retention limit")
	}
	host, secure, err := endpointHost(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	rt := cfg.Transport
	var own *http.Transport
	if rt == nil {
		tr, err := minio.DefaultTransport(secure)
		if err != nil {
			return nil, fmt.Errorf("s3store: transport: %w", err)
		}
		tr.DialContext = (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
		// Large reads of object bodies: fewer, larger socket reads.
		tr.ReadBufferSize = 256 << 10
		tr.WriteBufferSize = 256 << 10
		rt, own = tr, tr
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	} else {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	core, err := minio.NewCore(host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Transport:    rt,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   cfg.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: client for %s: %w", host, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Store{cfg: cfg, core: core, endpoint: host, log: logger, transport: own,
		index: map[string]indexEntry{}, written: map[string]bool{}}, nil
}

// FromEnv returns a store configured by the environment (see
// [ConfigFromEnv]); [ErrNotConfigured] when HARNESSX_ARTIFACTS is unset.
func FromEnv() (*Store, error) {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// String returns the store's location and endpoint, without credentials.
func (s *Store) String() string { return s.cfg.String() }

// Location returns s3://bucket/prefix.
func (s *Store) Location() string { return Location(s.cfg.Bucket, s.cfg.Prefix) }

// Config returns the configuration in effect, defaults filled in. It
// holds the credentials: do not log its fields one by one (its String
// and LogValue leave them out).
func (s *Store) Config() Config { return s.cfg }

// Keys of the layout.
func (s *Store) key(parts ...string) string {
	if s.cfg.Prefix != "" {
		parts = append([]string{s.cfg.Prefix}, parts...)
	}
	return path.Join(parts...)
}

func (s *Store) blobKey(sum string) string    { return s.key("blobs", "sha256", sum) }
func (s *Store) idKey(id string) string       { return s.key("ids", id) }
func (s *Store) refKey(sum, id string) string { return s.key("refs", sum, id) }

// Check tests the bucket and the credentials with one request (a listing
// of at most one key under the prefix: unlike a HEAD, its answer says
// what is wrong).
func (s *Store) Check(ctx context.Context) error {
	for o := range s.core.Client.ListObjectsIter(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.key("ids") + "/", MaxKeys: 1}) {
		if o.Err != nil {
			return s.wrap("checking", "", o.Err)
		}
		break
	}
	return nil
}

func (s *Store) check(id string) error {
	if !spill.ValidID(id) {
		return fmt.Errorf("%w: %.40q", spill.ErrInvalidID, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Put spools r while hashing it (memory up to SpoolMemory, then a
// temporary file), writes the content once under its SHA-256 with
// If-None-Match: * (skipped when the content is stored already; a 412
// answer, another writer having won, counts as success), then a
// reference and the id's index, the index with If-None-Match: * too, so
// an id is never rebound ([spill.ErrExists]). A failure leaves no index,
// so Open never sees a partial result.
func (s *Store) Put(ctx context.Context, id string, r io.Reader) (int64, error) {
	if err := s.check(id); err != nil {
		return 0, err
	}
	if _, err := s.core.StatObject(ctx, s.cfg.Bucket, s.idKey(id), minio.StatObjectOptions{}); err == nil {
		return 0, fmt.Errorf("%w: %s", spill.ErrExists, id)
	} else if werr := s.wrap("storing", id, err); !errors.Is(werr, fs.ErrNotExist) {
		return 0, werr
	}
	sp, err := s.spool(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("s3store: storing %s: %w", id, err)
	}
	defer sp.close()
	if err := s.putBlob(ctx, sp); err != nil {
		return 0, s.wrap("storing", id, err)
	}
	if err := s.putSmall(ctx, s.refKey(sp.sum, id), nil, false); err != nil {
		return 0, s.wrap("storing", id, err)
	}
	body, _ := json.Marshal(indexEntry{SHA256: sp.sum, Size: sp.size})
	if err := s.putSmall(ctx, s.idKey(id), body, true); err != nil {
		if isPrecondition(err) {
			return 0, fmt.Errorf("%w: %s", spill.ErrExists, id)
		}
		return 0, s.wrap("storing", id, err)
	}
	// Expire may have removed the content between the first check and
	// the reference: put it back.
	if _, err := s.core.StatObject(ctx, s.cfg.Bucket, s.blobKey(sp.sum), minio.StatObjectOptions{}); err != nil {
		if err := s.putBlob(ctx, sp); err != nil {
			return 0, s.wrap("storing", id, err)
		}
	}
	s.mu.Lock()
	s.index[id] = indexEntry{SHA256: sp.sum, Size: sp.size}
	s.written[id] = true
	s.mu.Unlock()
	return sp.size, nil
}

// spooled is a result read to the end: in memory or in a temporary file.
type spooled struct {
	sum  string
	size int64
	mem  []byte
	file *os.File
}

func (sp *spooled) reader() io.Reader {
	if sp.file != nil {
		return io.NewSectionReader(sp.file, 0, sp.size)
	}
	return bytes.NewReader(sp.mem)
}

func (sp *spooled) close() {
	if sp.file != nil {
		name := sp.file.Name()
		sp.file.Close()
		os.Remove(name)
	}
}

func (s *Store) spool(ctx context.Context, r io.Reader) (*spooled, error) {
	h := sha256.New()
	sp := &spooled{}
	var mem bytes.Buffer
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			sp.close()
			return nil, err
		}
		n, err := r.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			sp.size += int64(n)
			if sp.file == nil && int64(mem.Len()+n) > s.cfg.SpoolMemory {
				f, ferr := os.CreateTemp(s.cfg.SpoolDir, "harnessx-s3spool-")
				if ferr != nil {
					return nil, fmt.Errorf("spool file: %w", ferr)
				}
				sp.file = f
				if _, ferr := f.Write(mem.Bytes()); ferr != nil {
					sp.close()
					return nil, fmt.Errorf("spool file: %w", ferr)
				}
				mem = bytes.Buffer{}
			}
			if sp.file != nil {
				if _, ferr := sp.file.Write(buf[:n]); ferr != nil {
					sp.close()
					return nil, fmt.Errorf("spool file: %w", ferr)
				}
			} else {
				mem.Write(buf[:n])
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			sp.close()
			return nil, err
		}
	}
	sp.mem = mem.Bytes()
	sp.sum = hex.EncodeToString(h.Sum(nil))
	return sp, nil
}

// putBlob writes the content under its SHA-256 unless it is there.
func (s *Store) putBlob(ctx context.Context, sp *spooled) error {
	key := s.blobKey(sp.sum)
	info, err := s.core.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err == nil {
		if info.Size != sp.size {
			return fmt.Errorf("stored content %s has %d bytes, want %d: the object was changed", key, info.Size, sp.size)
		}
		return nil // written once already: a replayed step stores nothing new
	}
	if !errors.Is(s.wrap("", "", err), fs.ErrNotExist) {
		return err
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: 16 << 20, NumThreads: 2}
	opts.SetMatchETagExcept("*")
	_, err = s.core.Client.PutObject(ctx, s.cfg.Bucket, key, sp.reader(), sp.size, opts)
	if err != nil && !isPrecondition(err) {
		return err
	}
	return nil
}

// putSmall writes a small object, once when once is set.
func (s *Store) putSmall(ctx context.Context, key string, body []byte, once bool) error {
	// Unsigned payload with a Content-MD5: over plain HTTP minio-go would
	// send a streaming-signature body, whose framing an empty object's
	// Content-Length does not cover (versitygw then reads the rest as a
	// request and answers 400 on an idle connection).
	opts := minio.PutObjectOptions{ContentType: "application/json", DisableMultipart: true, DisableContentSha256: true, SendContentMd5: true}
	if once {
		opts.SetMatchETagExcept("*")
	}
	_, err := s.core.Client.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(body), int64(len(body)), opts)
	return err
}

// resolve returns the content of id.
func (s *Store) resolve(ctx context.Context, id string) (indexEntry, error) {
	s.mu.Lock()
	ie, ok := s.index[id]
	s.mu.Unlock()
	if ok {
		return ie, nil
	}
	rc, _, _, err := s.core.GetObject(ctx, s.cfg.Bucket, s.idKey(id), minio.GetObjectOptions{})
	if err != nil {
		return indexEntry{}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return indexEntry{}, err
	}
	if err := json.Unmarshal(data, &ie); err != nil || len(ie.SHA256) != 64 || ie.Size < 0 {
		return indexEntry{}, fmt.Errorf("index object %s is malformed", s.idKey(id))
	}
	if _, err := hex.DecodeString(ie.SHA256); err != nil {
		return indexEntry{}, fmt.Errorf("index object %s is malformed", s.idKey(id))
	}
	s.mu.Lock()
	s.index[id] = ie
	s.mu.Unlock()
	return ie, nil
}

// stat describes id's content object.
func (s *Store) stat(ctx context.Context, id string) (indexEntry, minio.ObjectInfo, error) {
	ie, err := s.resolve(ctx, id)
	if err != nil {
		return ie, minio.ObjectInfo{}, err
	}
	info, err := s.core.StatObject(ctx, s.cfg.Bucket, s.blobKey(ie.SHA256), minio.StatObjectOptions{})
	return ie, info, err
}

func stampOf(info minio.ObjectInfo) string {
	return info.ETag + "/" + strconv.FormatInt(info.LastModified.UnixNano(), 10) + "/" + strconv.FormatInt(info.Size, 10)
}

// Open returns a File that reads the content with ranged GETs (see
// [Config].MinReadAhead); it never downloads more than it is asked for
// plus the read-ahead. Its stamp is the content object's ETag, time and
// size. Reads use ctx.
func (s *Store) Open(ctx context.Context, id string) (spill.File, error) {
	if err := s.check(id); err != nil {
		return nil, err
	}
	_, info, err := s.stat(ctx, id)
	if err != nil {
		return nil, s.wrap("opening", id, err)
	}
	return &file{s: s, ctx: ctx, id: id, key: info.Key, etag: info.ETag, size: info.Size, stamp: stampOf(info)}, nil
}

// Stat describes the result; Path is always empty.
func (s *Store) Stat(ctx context.Context, id string) (spill.Info, error) {
	if err := s.check(id); err != nil {
		return spill.Info{}, err
	}
	_, info, err := s.stat(ctx, id)
	if err != nil {
		return spill.Info{}, s.wrap("stat", id, err)
	}
	return spill.Info{ID: id, Size: info.Size, Stamp: stampOf(info)}, nil
}

// Delete removes the id's index and reference, and the content when no
// other id refers to it.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.check(id); err != nil {
		return err
	}
	return s.delete(ctx, id)
}

func (s *Store) delete(ctx context.Context, id string) error {
	ie, err := s.resolve(ctx, id)
	if err != nil {
		if werr := s.wrap("deleting", id, err); !errors.Is(werr, fs.ErrNotExist) {
			return werr
		}
		return nil
	}
	if err := s.removeID(ctx, id, ie.SHA256); err != nil {
		return s.wrap("deleting", id, err)
	}
	return nil
}

// removeID removes id's index and reference, then the content if no
// reference is left.
func (s *Store) removeID(ctx context.Context, id, sum string) error {
	for _, k := range []string{s.idKey(id), s.refKey(sum, id)} {
		if err := s.core.RemoveObject(ctx, s.cfg.Bucket, k, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
			return err
		}
	}
	s.mu.Lock()
	delete(s.index, id)
	delete(s.written, id)
	s.mu.Unlock()
	refs := s.core.Client.ListObjectsIter(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.key("refs", sum) + "/", MaxKeys: 1})
	for o := range refs {
		if o.Err != nil {
			return o.Err
		}
		return nil // referenced by another id: keep the content
	}
	if err := s.core.RemoveObject(ctx, s.cfg.Bucket, s.blobKey(sum), minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// List describes every result with an index and content, in key order.
func (s *Store) List(ctx context.Context) ([]spill.Info, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	inv, err := s.inventory(ctx)
	if err != nil {
		return nil, s.wrap("listing", "", err)
	}
	var out []spill.Info
	for _, r := range inv.results {
		b, ok := inv.blobs[r.sum]
		if !ok || !r.indexed {
			continue
		}
		out = append(out, spill.Info{ID: r.id, Size: b.Size, Stamp: stampOf(b)})
	}
	return out, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// WriteObject writes r (size bytes, or -1 if unknown) as the object
// name under the store's prefix, once: an existing object is not
// replaced, and the error matches fs.ErrExist. Incident bundles are
// written with it.
func (s *Store) WriteObject(ctx context.Context, name string, r io.Reader, size int64) error {
	if s.isClosed() {
		return ErrClosed
	}
	key := s.key(name)
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	opts.SetMatchETagExcept("*")
	if _, err := s.core.Client.PutObject(ctx, s.cfg.Bucket, key, r, size, opts); err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("s3store: %s/%s: %w", Location(s.cfg.Bucket, ""), key, fs.ErrExist)
		}
		return s.wrap("writing", key, err)
	}
	return nil
}

// ReadObject opens the object name under the store's prefix (a whole
// GET, for small objects such as bundles).
func (s *Store) ReadObject(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, _, _, err := s.core.GetObject(ctx, s.cfg.Bucket, s.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("reading", s.key(name), err)
	}
	return rc, nil
}

// Close applies the retention of the configuration: with DeleteOnClose
// it deletes the results this Store wrote, with ExpireOnClose it runs
// Expire; then it closes its idle connections. Later calls of the other
// methods fail with ErrClosed. It is idempotent; errors are joined.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	var ids []string
	if s.cfg.Retention.DeleteOnClose {
		for id := range s.written {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := s.delete(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cfg.Retention.ExpireOnClose {
		if _, err := s.Expire(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("s3store: retention at close failed", "store", s.cfg, "err", err)
		return err
	}
	return nil
}

func isPrecondition(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed"
}

// isNotFound reports a missing object. A HEAD answer has no body: minio-go
// names a 404 to it NoSuchKey, whatever the reason.
func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	switch r.Code {
	case "NoSuchKey", "NotFound":
		return true
	case "":
		return r.StatusCode == http.StatusNotFound
	}
	return false
}

// isDenied reports refused credentials. versitygw answers an unknown
// access key with 404 XAdminUserNotFound.
func isDenied(r minio.ErrorResponse) bool {
	switch r.Code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "XAdminUserNotFound":
		return true
	}
	return r.StatusCode == http.StatusForbidden
}

// wrap turns a client error into one of the package's errors, naming the
// operation and the id or key, the bucket and the endpoint. It never
// includes credentials: minio-go's errors carry none, and the endpoint
// is a host.
func (s *Store) wrap(op, what string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("%s at %s", Location(s.cfg.Bucket, s.cfg.Prefix), s.endpoint)
	prefix := "s3store: "
	if op != "" {
		prefix += op + " "
	}
	if what != "" {
		prefix += what + ": "
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s%w", prefix, err)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNoBucket) || errors.Is(err, ErrAccessDenied) || errors.Is(err, ErrUnreachable) {
		return fmt.Errorf("%s%w", prefix, err)
	}
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchBucket":
		return fmt.Errorf("%s%w: bucket %q does not exist at %s", prefix, ErrNoBucket, s.cfg.Bucket, s.endpoint)
	case isNotFound(err):
		return fmt.Errorf("%snot found in %s: %w", prefix, where, fs.ErrNotExist)
	case isDenied(r):
		return fmt.Errorf("%s%w by %s (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", prefix, ErrAccessDenied, where, orDefault(r.Code, "403"))
	case r.Code != "":
		return fmt.Errorf("%s%s: %s: %s", prefix, where, r.Code, r.Message)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s%w: %s: %v", prefix, ErrUnreachable, where, err)
	}
	return fmt.Errorf("%s%s: %w", prefix, where, err)
}
