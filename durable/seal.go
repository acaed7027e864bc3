package durable

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/harnessx/harnessx/harness"
)

// Errors of sealing.
var (
	// ErrPayloadKey: a payload is sealed with a key this runtime does not
	// have (or with none configured), or the key does not open it. The
	// message names the key ID. Nothing was changed: a runtime with the
	// right key reads the rows.
	ErrPayloadKey = errors.New("durable: payload key")
	// ErrInvalidPayloadKey: a key given to [WithPayloadKey] or in
	// [EnvPayloadKey] is malformed.
	ErrInvalidPayloadKey = errors.New("durable: invalid payload key")
)

// EnvPayloadKey is the environment variable [Open] reads the payload keys
// from when no [WithPayloadKey] option is given. Its format is that of
// [ParsePayloadKeys]: "ID:BASE64KEY", then, comma-separated, the older
// keys that still open what they sealed:
//
//	HARNESSX_DURABLE_KEY="k2:…44 base64 characters…,k1:…"
const EnvPayloadKey = "HARNESSX_DURABLE_KEY"

// PayloadKey is an AES-256 key that seals run payloads at rest (see
// [WithPayloadKey]). ID names it in every payload it seals, so that a key
// can rotate: 1 to 64 characters of A-Z a-z 0-9 . _ -. Key is 32 bytes.
type PayloadKey struct {
	ID  string
	Key []byte
}

// WithPayloadKey seals, with AES-256-GCM, every payload the runtime hands
// to DBOS (a run's input and output, each model response and tool result,
// questions, answers, approvals and decisions) and every value it writes
// to its own tables (extension storage, engine snapshots), under
// current's ID. The older keys only open what they sealed: to rotate,
// give the new key as current and the old one among older, in every
// process on the database (first as an older key everywhere, then as
// current: a process must be able to open what any other seals). Rows written before a key was configured stay
// readable. Without this option Open reads [EnvPayloadKey]; with neither,
// nothing is sealed. See "Data at rest" in the package documentation.
func WithPayloadKey(current PayloadKey, older ...PayloadKey) Option {
	return func(c *config) {
		c.keys = append([]PayloadKey{current}, older...)
		c.keysSet = true
	}
}

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParsePayloadKeys parses the format of [EnvPayloadKey]: comma-separated
// "ID:BASE64KEY" entries, the first the current key, the others older
// keys; BASE64KEY is the standard base64 encoding (padded or not) of 32
// bytes, such as `openssl rand -base64 32` prints. Spaces around an entry
// are ignored. The error says which entry is wrong, never the key.
func ParsePayloadKeys(spec string) ([]PayloadKey, error) {
	var keys []PayloadKey
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		id, b64, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d: want ID:BASE64KEY", ErrInvalidPayloadKey, i+1)
		}
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			key, err = base64.RawStdEncoding.DecodeString(b64)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d (key id %q): the key is not standard base64", ErrInvalidPayloadKey, i+1, id)
		}
		k := PayloadKey{ID: id, Key: key}
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func checkKey(k PayloadKey) error {
	if !keyIDPattern.MatchString(k.ID) {
		return fmt.Errorf("%w: key id %q: want 1 to 64 characters of A-Z a-z 0-9 . _ -", ErrInvalidPayloadKey, k.ID)
	}
	if len(k.Key) != 32 {
		return fmt.Errorf("%w: key id %q: the key has %d bytes, want 32 (AES-256)", ErrInvalidPayloadKey, k.ID, len(k.Key))
	}
	return nil
}

// resolveKeys builds cfg.sealer from WithPayloadKey or the environment.
func resolveKeys(cfg *config) error {
	keys := cfg.keys
	if !cfg.keysSet {
		spec := strings.TrimSpace(os.Getenv(EnvPayloadKey))
		if spec == "" {
			return nil
		}
		var err error
		if keys, err = ParsePayloadKeys(spec); err != nil {
			return fmt.Errorf("durable: %s: %w", EnvPayloadKey, err)
		}
	}
	s, err := newSealer(keys)
	if err != nil {
		return fmt.Errorf("durable: payload key: %w", err)
	}
	cfg.sealer = s
	return nil
}

// sealer seals and opens payloads. A sealed payload is the text
//
//	hx1:<key id>:<kind>:<base64 of nonce ‖ AES-256-GCM ciphertext>
//
// whose header ("hx1:<key id>:<kind>:") is authenticated with it, as is,
// for the runtime's own tables, the row it belongs to. kind names what
// the plaintext (JSON) is: a Go type for DBOS's payloads (sealedTypes),
// "storage" or "snapshot" for the runtime's tables.
type sealer struct {
	cur   string
	aeads map[string]cipher.AEAD
}

const sealPrefix = "hx1:"

func newSealer(keys []PayloadKey) (*sealer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key given", ErrInvalidPayloadKey)
	}
	s := &sealer{cur: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		if _, dup := s.aeads[k.ID]; dup {
			return nil, fmt.Errorf("%w: key id %q given twice", ErrInvalidPayloadKey, k.ID)
		}
		block, err := aes.NewCipher(k.Key)
		if err != nil {
			return nil, err
		}
		if s.aeads[k.ID], err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// seal seals plain as kind with the current key; bind is authenticated
// with it (the row's identity; "" for DBOS's payloads).
func (s *sealer) seal(kind string, plain []byte, bind string) string {
	return string(s.sealBytes(kind, plain, bind))
}

// sealBytes is seal returning the sealed text as bytes (for the blobs
// table's binary column).
func (s *sealer) sealBytes(kind string, plain []byte, bind string) []byte {
	aead := s.aeads[s.cur]
	header := sealPrefix + s.cur + ":" + kind + ":"
	buf := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(buf)
	buf = aead.Seal(buf, buf, plain, []byte(header+bind))
	out := make([]byte, len(header)+base64.RawStdEncoding.EncodedLen(len(buf)))
	copy(out, header)
	base64.RawStdEncoding.Encode(out[len(header):], buf)
	return out
}

// isSealed tells a sealed payload from JSON (which never starts with "h").
func isSealed(v string) bool { return strings.HasPrefix(v, sealPrefix) }

// open opens a sealed payload and returns its kind and plaintext. A
// payload sealed with a key this runtime lacks (or, s nil, with any key)
// is ErrPayloadKey naming the key's ID.
func (s *sealer) open(sealed, bind string) (kind string, plain []byte, err error) {
	rest := strings.TrimPrefix(sealed, sealPrefix)
	kid, rest, ok1 := strings.Cut(rest, ":")
	kind, body, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return "", nil, fmt.Errorf("%w: a sealed payload with a malformed header", ErrPayloadKey)
	}
	if s == nil {
		return "", nil, fmt.Errorf("%w: a payload is sealed with key id %q and this runtime has no payload key (WithPayloadKey, %s)", ErrPayloadKey, kid, EnvPayloadKey)
	}
	aead := s.aeads[kid]
	if aead == nil {
		return "", nil, fmt.Errorf("%w: a payload is sealed with key id %q, which this runtime does not have", ErrPayloadKey, kid)
	}
	raw, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", nil, fmt.Errorf("%w: a payload sealed with key id %q is damaged", ErrPayloadKey, kid)
	}
	header := sealed[:len(sealed)-len(body)]
	plain, err = aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(header+bind))
	if err != nil {
		return "", nil, fmt.Errorf("%w: key id %q does not open a payload sealed under that id (another key with the same id, or a damaged row)", ErrPayloadKey, kid)
	}
	return kind, plain, nil
}

// unreadable is the error for a sealed payload that DBOS handed back
// unopened (a listing decodes with the serializer, and returns the stored
// text when that fails): this runtime's keys do not open it.
func unreadable(sealed string) error {
	kid, _, _ := strings.Cut(strings.TrimPrefix(sealed, sealPrefix), ":")
	return fmt.Errorf("%w: a payload sealed with key id %q does not open with this runtime's keys", ErrPayloadKey, kid)
}

// sealValue seals a value of the runtime's own tables as kind, bound to
// its row; without a key it returns the value as it is.
func (s *sealer) sealValue(kind string, plain []byte, bind string) string {
	if s == nil {
		return string(plain)
	}
	return s.seal(kind, plain, bind)
}

// openValue reads a value of the runtime's own tables: a sealed one is
// opened (and must be of kind and bound to its row), a plain one, written
// without a key, is returned as it is.
func (s *sealer) openValue(kind, v, bind string) ([]byte, error) {
	if !isSealed(v) {
		return []byte(v), nil
	}
	k, plain, err := s.open(v, bind)
	if err != nil {
		return nil, err
	}
	if k != kind {
		return nil, fmt.Errorf("%w: a %s value holds a sealed %s", ErrPayloadKey, kind, k)
	}
	return plain, nil
}

// sealedFormat is the serialization name DBOS records with the payloads
// of a runtime with a key (DBOS's own is "DBOS_JSON"). Part of the on-disk
// format.
const sealedFormat = "harnessx_sealed_v1"

// sealedNil stands for a nil payload (DBOS asks for a non-nil string).
const sealedNil = "hx1:nil"

// sealSerializer is the dbos.Serializer[any] of a runtime with a key: the
// JSON of the value, sealed, its kind naming its Go type. DBOS's adapter
// wants Decode to return the exact type the workflow or step declares, so
// the kind maps back to a type of a fixed registry: the types harnessx
// passes through DBOS, and the one DBOS records itself (Recv's deadline).
type sealSerializer struct{ s *sealer }

var _ dbos.Serializer[any] = sealSerializer{}

func (sealSerializer) Name() string { return sealedFormat }

func (z sealSerializer) Encode(v any) (*string, error) {
	if isNilValue(v) {
		s := sealedNil
		return &s, nil
	}
	reg := sealedTypes()
	kind, ok := reg.kinds[reflect.TypeOf(v)]
	if !ok {
		return nil, fmt.Errorf("durable: cannot seal a %T: not a type the runtime records", v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("durable: seal a %T: %w", v, err)
	}
	out := z.s.seal(kind, data, "")
	return &out, nil
}

func (z sealSerializer) Decode(data *string) (any, error) {
	if data == nil || *data == sealedNil {
		return nil, nil
	}
	if !isSealed(*data) {
		return nil, fmt.Errorf("%w: a payload recorded as %s is not sealed", ErrPayloadKey, sealedFormat)
	}
	kind, plain, err := z.s.open(*data, "")
	if err != nil {
		return nil, err
	}
	dec := sealedTypes().decode[kind]
	if dec == nil {
		return nil, fmt.Errorf("durable: a sealed payload of unknown kind %q (written by a newer build?)", kind)
	}
	return dec(plain)
}

func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
		return rv.IsNil()
	}
	return false
}

// typeRegistry maps the types sealed through DBOS to their kinds and back.
type typeRegistry struct {
	kinds  map[reflect.Type]string
	decode map[string]func([]byte) (any, error)
}

func register[T any](r *typeRegistry, kind string) {
	r.kinds[reflect.TypeFor[T]()] = kind
	r.decode[kind] = func(data []byte) (any, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("durable: open a sealed %s: %w", kind, err)
		}
		return v, nil
	}
}

// sealedTypes is built once and never changed. The kinds are part of the
// on-disk format.
var sealedTypes = sync.OnceValue(func() *typeRegistry {
	r := &typeRegistry{kinds: map[reflect.Type]string{}, decode: map[string]func([]byte) (any, error){}}
	register[runInput](r, "run-input")
	register[runOutput](r, "run-output")
	register[approvalInput](r, "approval-input")
	register[askInput](r, "ask-input")
	register[harness.Answer](r, "answer")
	register[[]harness.Decision](r, "decisions")
	register[modelResult](r, "model-result")
	register[*harness.ModelResponse](r, "model-response")
	register[*harness.ToolResult](r, "tool-result")
	// DBOS's own: Recv records its deadline (Unix milliseconds) as a
	// "DBOS.sleep" step; a workflow's ID and plain strings.
	register[int64](r, "int64")
	register[string](r, "string")
	return r
})

// modelResult is what a model step records with a key: the response, or
// the provider's error as text. The error is part of the sealed output
// because DBOS records a step's error in plain text beside it. Its JSON is
// the response's own plus one member, so a response recorded before
// (*harness.ModelResponse) decodes into it.
type modelResult struct {
	*harness.ModelResponse
	Err string `json:"harnessx_error,omitempty"`
}

// modelStep runs the model request fn as the step named s.Key. With a key
// the provider's error (or a panic) is recorded sealed in the step's
// output, not as the step's error: the first execution returns the error
// itself, a replay an error with its text, as DBOS replays a recorded
// error.
//
// Large media parts of the response are recorded by reference (blob.go)
// and restored before the response is returned.
func (r *runner) modelStep(rs *runState, s *harness.Step, inner context.Context, fn func(context.Context) (*harness.ModelResponse, error)) (*harness.ModelResponse, error) {
	if r.rt.cfg.sealer == nil {
		resp, err := dbos.RunAsStep(rs.wf, func(context.Context) (resp *harness.ModelResponse, err error) {
			defer func() {
				if p := recover(); p != nil {
					resp, err = nil, fmt.Errorf("durable: model step %s panicked: %v", s.Key, p)
				}
			}()
			resp, err = fn(inner)
			return r.rt.recordResponse(inner, rs, s.Key, resp), err
		}, dbos.WithStepName(s.Key))
		if err == nil {
			if err := r.rt.restoreResponse(inner, rs, s.Key, resp); err != nil {
				return nil, err
			}
		}
		return resp, err
	}
	var first error // the provider's own error, when this execution ran the step
	out, err := dbos.RunAsStep(rs.wf, func(context.Context) (res modelResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				first = fmt.Errorf("durable: model step %s panicked: %v", s.Key, p)
				res = modelResult{Err: first.Error()}
			}
		}()
		resp, err := fn(inner)
		if err != nil {
			first = err
			return modelResult{Err: err.Error()}, nil
		}
		return modelResult{ModelResponse: r.rt.recordResponse(inner, rs, s.Key, resp)}, nil
	}, dbos.WithStepName(s.Key))
	if err == nil {
		err = r.rt.restoreResponse(inner, rs, s.Key, out.ModelResponse)
	}
	switch {
	case err != nil: // the runtime's (the database, a cancelled run, a lost blob)
		return nil, err
	case out.Err == "":
		return out.ModelResponse, nil
	case first != nil:
		return out.ModelResponse, first
	}
	return out.ModelResponse, errors.New(out.Err)
}

// sealRun is the run workflow DBOS runs: runWorkflow, whose error, with a
// key, is recorded as a failed run's sealed output rather than as DBOS's
// plain-text workflow error. A run stopped by Close keeps its error, so
// that DBOS leaves it pending.
func (rt *Runtime) sealRun(ctx dbos.Context, in runInput) (runOutput, error) {
	out, err := rt.runWorkflow(ctx, in)
	if err == nil || rt.cfg.sealer == nil || ctx.Err() != nil {
		return out, err
	}
	runID, _ := dbos.GetWorkflowID(ctx)
	return runOutput{RunID: runID, Status: harness.StatusFailed, Err: err.Error()}, nil
}

// The keys table records the IDs of the keys that sealed payloads in the
// database, so that a runtime without one of them is refused at Open
// instead of failing the runs it cannot read: DBOS fails a run whose
// input it cannot decode, for good.

func keysTable(l *leaseDB) string {
	if l.postgres {
		return "harnessx.keys"
	}
	return "harnessx_keys"
}

// checkKeys refuses, with ErrPayloadKey, a runtime that lacks a key ID
// recorded in the keys table, then records the runtime's current key ID.
// The first runtime with a key on a database also refuses while a
// workflow recorded without a key is unfinished: DBOS records a
// workflow's serialization when it starts and its output, later, with the
// serializer of the process that finishes it, so that such a run,
// finished under a key, could not be read back.
func (rt *Runtime) checkKeys(ctx context.Context) error {
	db, err := rt.auxDB(ctx)
	if err != nil {
		return err
	}
	t := keysTable(db)
	// Several processes creating it at once on Postgres: one may fail on
	// the catalog's unique index while the other's CREATE commits (as
	// openLeaseDB's tables); IF NOT EXISTS succeeds at a later attempt.
	for attempt := 1; ; attempt++ {
		_, err := db.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (key_id TEXT NOT NULL PRIMARY KEY)`)
		if err == nil {
			break
		}
		if attempt == 5 || ctx.Err() != nil {
			return fmt.Errorf("durable: create the keys table: %w", err)
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
	rows, err := db.db.QueryContext(ctx, `SELECT key_id FROM `+t)
	if err != nil {
		return fmt.Errorf("durable: read the payload key ids: %w", err)
	}
	defer rows.Close()
	var recorded, missing []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("durable: read the payload key ids: %w", err)
		}
		recorded = append(recorded, id)
		if s := rt.cfg.sealer; s == nil || s.aeads[id] == nil {
			missing = append(missing, id)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("durable: read the payload key ids: %w", err)
	}
	rows.Close()
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: the database holds payloads sealed with key id %q, which this runtime does not have (WithPayloadKey, %s); nothing was read or changed", ErrPayloadKey, missing, EnvPayloadKey)
	}
	s := rt.cfg.sealer
	if s == nil || slices.Contains(recorded, s.cur) {
		return nil
	}
	if len(recorded) == 0 {
		ws := "workflow_status"
		if db.postgres {
			ws = "dbos.workflow_status"
		}
		var id string
		err := db.db.QueryRowContext(ctx, db.q(`SELECT workflow_uuid FROM `+ws+` WHERE status IN ('PENDING', 'ENQUEUED', 'DELAYED')
AND (serialization IS NULL OR serialization <> $1) LIMIT 1`), sealedFormat).Scan(&id)
		if err == nil {
			return fmt.Errorf("%w: workflow %q (and maybe others) started without a payload key and has not finished; finish the unfinished runs without a key before the first key is given (a run cannot switch)", ErrPayloadKey, id)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("durable: look for unfinished runs without a key: %w", err)
		}
	}
	if _, err := db.db.ExecContext(ctx, db.q(`INSERT INTO `+t+` (key_id) VALUES ($1) ON CONFLICT (key_id) DO NOTHING`), s.cur); err != nil {
		return fmt.Errorf("durable: record the payload key id: %w", err)
	}
	return nil
}

// serializer is the dbos.Config.Serializer of the configuration: nil (DBOS's
// own JSON) without a key.
func (c *config) serializer() dbos.Serializer[any] {
	if c.sealer == nil {
		return nil
	}
	return sealSerializer{c.sealer}
}

// closeAux closes the connection to the runtime's own tables, if open.
func (rt *Runtime) closeAux() {
	rt.auxMu.Lock()
	defer rt.auxMu.Unlock()
	if rt.aux != nil {
		rt.aux.close()
		rt.aux = nil
	}
}

// storageBind is what a sealed storage value is bound to: its row.
func storageBind(scope harness.StorageScope, key string) string {
	return scope.Namespace + "\x00" + scope.Session + "\x00" + key
}

// payloadColumns are the columns that hold payloads: DBOS's (its schema
// of v1.8.0) and the runtime's own.
// A binary column (the blobs') holds the sealed text as bytes.
var payloadColumns = []struct {
	table, column string
	binary        bool
}{
	{"workflow_input", "inputs", false}, {"workflow_status", "inputs", false}, {"workflow_status", "output", false},
	{"workflow_output", "output", false}, {"operation_outputs", "output", false}, {"notifications", "message", false},
	{"workflow_events", "value", false}, {"workflow_events_history", "value", false}, {"streams", "value", false},
	{"{KV}", "value", false}, {"{P}", "state", false}, {"{B}", "data", true},
}

// RetireKey forgets the key ID id once nothing in the database is sealed
// with it any more, so that runtimes without that key may open the
// database again (Open refuses a runtime that lacks a key ID the database
// recorded). It reads every payload column of the database, so it costs a
// scan of the tables; it changes nothing but the keys table. It returns
// an [ErrPayloadKey] error that says how many payloads id still seals,
// and where, when some are left (an unfinished run, a run within the
// retention, an extension storage value). The current key cannot retire.
func (rt *Runtime) RetireKey(ctx context.Context, id string) error {
	if s := rt.cfg.sealer; s != nil && s.cur == id {
		return fmt.Errorf("%w: key id %q is this runtime's current key", ErrPayloadKey, id)
	}
	if !keyIDPattern.MatchString(id) {
		return fmt.Errorf("%w: key id %q", ErrInvalidPayloadKey, id)
	}
	db, err := rt.auxDB(ctx)
	if err != nil {
		return err
	}
	var left []string
	for _, c := range payloadColumns {
		table := c.table
		if db.postgres && !strings.HasPrefix(table, "{") {
			table = "dbos." + table
		}
		var n int
		var prefix any = sealPrefix + id + ":"
		if c.binary {
			prefix = []byte(sealPrefix + id + ":")
		}
		q := db.q(`SELECT COUNT(*) FROM ` + table + ` WHERE substr(` + c.column + `, 1, $1) = $2`)
		if err := db.db.QueryRowContext(ctx, q, len(sealPrefix)+len(id)+1, prefix).Scan(&n); err != nil {
			return fmt.Errorf("durable: retire key id %q: read %s: %w", id, table, err)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d in %s.%s", n, db.q(c.table), c.column))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w: key id %q still seals payloads (%s); keep its key", ErrPayloadKey, id, strings.Join(left, ", "))
	}
	if _, err := db.db.ExecContext(ctx, db.q(`DELETE FROM `+keysTable(db)+` WHERE key_id = $1`), id); err != nil {
		return fmt.Errorf("durable: retire key id %q: %w", id, err)
	}
	return nil
}
