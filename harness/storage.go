package harness

import (
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultStateDir is the state directory of an agent without
// [WithStateDir], relative to the working directory when the agent is
// built.
const DefaultStateDir = ".harnessx"

// Limits of storage names. Keys and session IDs are bounded so that the
// file store can name a file after them.
const (
	maxNamespaceLen  = 64
	maxStorageKeyLen = 150
)

var (
	// ErrInvalidStorageName is returned by [Storage] methods for a
	// namespace, session ID or key that is not valid (see
	// [ExtensionContext.Storage]).
	ErrInvalidStorageName = errors.New("harness: invalid storage name")
	// ErrNestedSession is returned by every method of the store that
	// [Storage.Session] returns when it is called on a session's store:
	// sessions do not nest.
	ErrNestedSession = errors.New("harness: nested storage session")
)

// StorageScope names one key space of a [StorageBackend]: a namespace,
// and, for session storage, the session. Session "" is the namespace's
// shared space, seen by every session.
type StorageScope struct {
	Namespace string
	Session   string
}

// String returns the namespace, and the session when there is one.
func (s StorageScope) String() string {
	if s.Session == "" {
		return s.Namespace
	}
	return s.Namespace + " (session " + s.Session + ")"
}

// StorageBackend keeps the values of [Storage]. The engine validates
// namespaces, session IDs and keys before it calls a backend, and hands it
// values that are valid JSON. The default is a file store under the
// agent's state directory ([NewFileStorage]); a durable runtime supplies
// one on its database with [WithStorage]. harnesstest.RunStorageTests is
// the conformance suite that every backend should pass.
//
// Every method may block on I/O and must honour ctx where it can; all
// must be safe for concurrent use. A write must be atomic: after a crash a
// key holds its old value or its new one, never a mix.
type StorageBackend interface {
	// Get returns the value of key, and found false (with a nil error)
	// when there is none.
	Get(ctx context.Context, scope StorageScope, key string) (value json.RawMessage, found bool, err error)
	// Put sets the value of key, replacing any.
	Put(ctx context.Context, scope StorageScope, key string, value json.RawMessage) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, scope StorageScope, key string) error
	// List returns the keys of scope that begin with prefix, sorted.
	// Keys of a session scope are not listed in the shared scope, nor the
	// other way round.
	List(ctx context.Context, scope StorageScope, prefix string) ([]string, error)
}

// WithStateDir sets the directory where the agent keeps durable state:
// its [Storage] lives in dir/storage. Default [DefaultStateDir]. A
// relative dir is made absolute when the agent is built; directories are
// created on the first write. An empty dir turns the file store off: the
// agent then has no storage unless [WithStorage] gives one.
func WithStateDir(dir string) Option {
	return func(c *config) { c.stateDir, c.stateDirSet = dir, true }
}

// WithStorage sets the backend of [ExtensionContext.Storage], in place of
// the file store under the state directory. A durable runtime passes its
// database's backend, so that stored values live with the runs.
func WithStorage(b StorageBackend) Option { return func(c *config) { c.storage = b } }

// newStore picks the agent's backend from the configuration.
func (c *config) newStore() StorageBackend {
	if c.storage != nil {
		return c.storage
	}
	dir := DefaultStateDir
	if c.stateDirSet {
		dir = c.stateDir
	}
	if dir == "" {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return NewFileStorage(filepath.Join(dir, "storage"))
}

// Storage returns the key-value store of namespace ns, shared by the
// agents that share the storage backend (by default, the state
// directory): values survive a restart and a [LoadSession]. Use
// [Storage.Session] for values that belong to one session.
//
// A namespace is 1 to 64 of a-z, 0-9, '.', '_' and '-', beginning with a
// letter or digit; use your extension's name. A bad namespace is reported
// by every method of the returned Storage, as [ErrInvalidStorageName].
//
// Storage needs [FeatureStorage]. Without it, every method of the returned
// Storage returns an [*UnsupportedError], and, unless the extension
// checked [ExtensionContext.Supports] first, a call during Install fails
// the install.
func (ec *ExtensionContext) Storage(ns string) *Storage {
	if err := ec.use(FeatureStorage); err != nil {
		return &Storage{err: err}
	}
	if err := validNamespace(ns); err != nil {
		return &Storage{err: err}
	}
	return &Storage{b: ec.agent.store, scope: StorageScope{Namespace: ns}}
}

// Storage is a synchronous key-value store of JSON values in one
// namespace, from [ExtensionContext.Storage]. Its methods block on the
// backend's I/O and are safe for concurrent use.
//
// A key is 1 to 150 bytes of valid UTF-8 without control characters; '/'
// is an ordinary character, convenient for prefixes ("pages/"). A value
// is anything encoding/json encodes, and comes back as its JSON.
type Storage struct {
	b     StorageBackend
	scope StorageScope
	err   error
}

// Session returns the store of one session in the same namespace: its
// keys are apart from the shared ones and from other sessions'. A session
// ID is 1 to 150 bytes of valid UTF-8 without control characters; use
// [ExtensionContext.SessionID] for the agent's.
//
// Sessions do not nest: called on a session's store (st.Session(a).Session(b)),
// Session returns a store whose every method fails with [ErrNestedSession],
// naming both sessions, rather than quietly using session b. Like every
// error of a store, it shows at the first use, or at once with [Storage.Err].
func (s *Storage) Session(id string) *Storage {
	if s.err != nil {
		return s
	}
	if s.scope.Session != "" {
		return &Storage{err: fmt.Errorf("%w: Session(%q) called on the store of session %q in namespace %s; call it on the namespace's store",
			ErrNestedSession, id, s.scope.Session, s.scope.Namespace)}
	}
	if err := validStorageName("session ID", id); err != nil {
		return &Storage{err: err}
	}
	return &Storage{b: s.b, scope: StorageScope{Namespace: s.scope.Namespace, Session: id}}
}

// Scope returns the key space the store reads and writes; the zero scope
// for a store whose methods fail (see [Storage.Err]).
func (s *Storage) Scope() StorageScope { return s.scope }

// Err returns the error that every method of the store returns because of
// how the store was made — a bad namespace or session ID
// ([ErrInvalidStorageName]), a nested session ([ErrNestedSession]), an
// agent without storage (an [*UnsupportedError]) — or nil for a usable
// store. A store that is usable may still fail at an operation (a bad key,
// the backend's I/O).
func (s *Storage) Err() error { return s.err }

// Get decodes the value of key into v, as json.Unmarshal does, and
// reports whether there was one. A *json.RawMessage receives the stored
// JSON as is.
func (s *Storage) Get(ctx context.Context, key string, v any) (found bool, err error) {
	if err := s.check(key); err != nil {
		return false, err
	}
	raw, found, err := s.b.Get(ctx, s.scope, key)
	if err != nil || !found {
		return false, s.wrap("get", key, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, s.wrap("get", key, fmt.Errorf("decoding the value: %w", err))
	}
	return true, nil
}

// Put stores v, encoded as JSON, under key. A value that encoding/json
// cannot encode (a channel, NaN) is an error and changes nothing.
func (s *Storage) Put(ctx context.Context, key string, v any) error {
	if err := s.check(key); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return s.wrap("put", key, fmt.Errorf("the value is not JSON-compatible: %w", err))
	}
	return s.wrap("put", key, s.b.Put(ctx, s.scope, key, raw))
}

// Delete removes key. Deleting a missing key is not an error.
func (s *Storage) Delete(ctx context.Context, key string) error {
	if err := s.check(key); err != nil {
		return err
	}
	return s.wrap("delete", key, s.b.Delete(ctx, s.scope, key))
}

// List returns the keys that begin with prefix ("" for all), sorted.
func (s *Storage) List(ctx context.Context, prefix string) ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	keys, err := s.b.List(ctx, s.scope, prefix)
	return keys, s.wrap("list", prefix, err)
}

func (s *Storage) check(key string) error {
	if s.err != nil {
		return s.err
	}
	return validStorageName("key", key)
}

func (s *Storage) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("harness: storage %s %s %q: %w", s.scope, op, key, err)
}

func validNamespace(ns string) error {
	if ns == "" || len(ns) > maxNamespaceLen {
		return fmt.Errorf("%w: namespace %q: want 1 to %d characters", ErrInvalidStorageName, ns, maxNamespaceLen)
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return fmt.Errorf("%w: namespace %q: use a-z, 0-9, '.', '_' and '-', beginning with a letter or digit", ErrInvalidStorageName, ns)
		}
	}
	return nil
}

func validStorageName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidStorageName, what)
	case len(s) > maxStorageKeyLen:
		return fmt.Errorf("%w: %s of %d bytes, more than %d", ErrInvalidStorageName, what, len(s), maxStorageKeyLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidStorageName, what, s)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %s %q contains a control character", ErrInvalidStorageName, what, s)
	}
	return nil
}

// ---- the file store ----

// fileNames encodes keys and session IDs as file names: lower-case base32
// without padding, which every file system keeps apart and which needs no
// escaping.
var fileNames = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewFileStorage returns a [StorageBackend] that keeps each value in a
// file under dir: dir/<namespace>/shared/<key>.json and
// dir/<namespace>/sessions/<session>/<key>.json, with key and session
// encoded in base32. Writes go to a temporary file that is synced and
// renamed over the old one, so a crash leaves the old value or the new
// one. Directories are created on the first write. It is the default
// backend, under the state directory ([WithStateDir]).
func NewFileStorage(dir string) StorageBackend { return &fileStorage{dir: dir} }

type fileStorage struct{ dir string }

func (f *fileStorage) scopeDir(s StorageScope) string {
	if s.Session == "" {
		return filepath.Join(f.dir, s.Namespace, "shared")
	}
	return filepath.Join(f.dir, s.Namespace, "sessions", fileNames.EncodeToString([]byte(s.Session)))
}

func (f *fileStorage) file(s StorageScope, key string) string {
	return filepath.Join(f.scopeDir(s), fileNames.EncodeToString([]byte(key))+".json")
}

func (f *fileStorage) Get(ctx context.Context, s StorageScope, key string) (json.RawMessage, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(f.file(s, key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !json.Valid(b) {
		return nil, false, fmt.Errorf("file %s is corrupt: not JSON", f.file(s, key))
	}
	return b, true, nil
}

func (f *fileStorage) Put(ctx context.Context, s StorageScope, key string, value json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !json.Valid(value) {
		return errors.New("the value is not valid JSON")
	}
	dir := f.scopeDir(s)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(value)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, f.file(s, key))
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	syncDir(dir)
	return nil
}

func (f *fileStorage) Delete(ctx context.Context, s StorageScope, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.Remove(f.file(s, key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		syncDir(f.scopeDir(s))
	}
	return err
}

func (f *fileStorage) List(ctx context.Context, s StorageScope, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(f.scopeDir(s))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	keys := []string{}
	for _, e := range ents {
		enc, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue // temporary files, strays
		}
		k, err := fileNames.DecodeString(enc)
		if err != nil {
			continue
		}
		if key := string(k); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// syncDir makes a rename or removal in dir durable, where the system
// allows syncing a directory; where it does not, the change is still
// atomic.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
