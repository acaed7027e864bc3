package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/partref"
)

// Large media parts are recorded by reference. Before a step's value goes
// to DBOS, each image, document or audio part with at least blobThreshold
// inline bytes has its bytes written to the runtime's blobs table
// ("harnessx.blobs" on Postgres, "harnessx_blobs" on SQLite), once per
// run and content (the row's key is the run and the SHA-256), and the
// value DBOS records holds, in place of the part, a copy whose Media has
// no Data and the reference as its URI (blobURI). The engine's Media is
// not changed: the recorded value is a copy of the result or response
// with copies of the parts it references.
//
// The runner hands the engine the bytes, never the reference: what a step
// returns from DBOS, the first time or replayed, has its references
// restored, from the bytes this execution wrote or read (blobCache), or
// from the table, checked against the reference's SHA-256 and size. A
// blob that is missing or does not match fails the run with [ErrBlob]
// (the step's value never reaches the engine with other bytes).
//
// A step recorded before references existed holds its bytes inline and
// has nothing to restore.

// blobThreshold is the smallest inline part, in bytes, that a step records
// by reference (16 KiB). Smaller parts stay inline in the step's record: a
// row of the blobs table and its lookup cost more than they save.
const blobThreshold = 16 << 10

// blobParam introduces a reference's size in its URI:
//
//	artifact:sha256:<64 hex digits>?harnessx-blob=<size in bytes>
//
// The part reference (internal/partref) names the bytes as the tracing
// extension and the flight recorder name them; the parameter tells the
// runtime's references from a URI a tool or a model returned. A media
// part with no Data, no file ID and a URI of this form in a recorded step
// is a reference. Part of the on-disk format.
const blobParam = "?harnessx-blob="

// blobURI is the reference to size bytes whose SHA-256 is sum.
func blobURI(sum harness.Hash, size int) string {
	return partref.URI(sum) + blobParam + strconv.Itoa(size)
}

// blobRef reports whether m is a reference, and to what.
func blobRef(m *harness.Media) (sum harness.Hash, size int64, ok bool) {
	if m == nil || len(m.Data) != 0 || m.FileID != "" || !strings.HasPrefix(m.URI, partref.Scheme+":") {
		return sum, 0, false
	}
	ref, n, found := strings.Cut(m.URI, blobParam)
	if !found {
		return sum, 0, false
	}
	if sum, ok = partref.Parse(ref); !ok {
		return sum, 0, false
	}
	size, err := strconv.ParseInt(n, 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != n {
		return sum, 0, false
	}
	return sum, size, true
}

// blobCache holds the bytes an execution of a run wrote to the blobs table
// or read from it, by SHA-256: a reference to them restores without a
// read, and the same bytes in a later step are not written again. The
// engine holds the same bytes in the conversation, so the cache costs no
// more than its map. Safe for concurrent use (parallel tool calls).
type blobCache struct {
	mu sync.Mutex
	m  map[harness.Hash][]byte
}

func (c *blobCache) get(sum harness.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[sum]
	return b, ok
}

func (c *blobCache) put(sum harness.Hash, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[harness.Hash][]byte{}
	}
	c.m[sum] = b
}

// recordParts returns parts with each media part of at least
// blobThreshold inline bytes replaced by a reference, its bytes written to
// the blobs table, and whether it replaced any; parts itself, not a copy,
// when it replaced none. A part whose bytes cannot be written stays
// inline (and is logged): the step then records it whole, as before.
func (rt *Runtime) recordParts(ctx context.Context, rs *runState, key string, parts []harness.Part) ([]harness.Part, bool) {
	var out []harness.Part
	for i := range parts {
		m := parts[i].Media
		if m == nil || len(m.Data) < blobThreshold {
			continue
		}
		sum := m.SHA256()
		if err := rt.putBlob(ctx, rs, sum, m.Data); err != nil {
			rt.cfg.logger.Warn("durable: cannot write a large part to the blobs table; the step records it inline",
				"run_id", rs.runID, "step", key, "part", i, "size", len(m.Data), "error", err)
			continue
		}
		if out == nil {
			out = slices.Clone(parts)
		}
		out[i].Media = &harness.Media{MIME: m.MIME, Name: m.Name, URI: blobURI(sum, len(m.Data))}
	}
	if out == nil {
		return parts, false
	}
	return out, true
}

// putBlob writes data, whose SHA-256 is sum, to the run's blobs, unless
// this execution wrote or read it already.
func (rt *Runtime) putBlob(ctx context.Context, rs *runState, sum harness.Hash, data []byte) error {
	if _, ok := rs.blobs.get(sum); ok {
		return nil
	}
	db, err := rt.auxDB(ctx)
	if err != nil {
		return err
	}
	rs.wroteBlobs.Store(true) // before the write: its rows go with the run's
	if err := db.putBlob(ctx, rs.runID, sum, data); err != nil {
		return err
	}
	rs.blobs.put(sum, data)
	return nil
}

// recordResult is the tool result to record for res: res itself, or a
// copy whose large parts are references.
func (rt *Runtime) recordResult(ctx context.Context, rs *runState, key string, res *harness.ToolResult) *harness.ToolResult {
	if res == nil || len(res.Parts) == 0 {
		return res
	}
	parts, ok := rt.recordParts(ctx, rs, key, res.Parts)
	if !ok {
		return res
	}
	cp := *res
	cp.Parts = parts
	return &cp
}

// recordResponse is the model response to record for resp: resp itself,
// or a copy whose large parts are references.
func (rt *Runtime) recordResponse(ctx context.Context, rs *runState, key string, resp *harness.ModelResponse) *harness.ModelResponse {
	if resp == nil {
		return nil
	}
	parts, ok := rt.recordParts(ctx, rs, key, resp.Message.Content)
	if !ok {
		return resp
	}
	cp := *resp
	cp.Message.Content = parts
	return &cp
}

// restoreParts replaces, in parts (a value DBOS returned: the recorded
// copy or a decoded one, never the engine's), each reference by a part
// with the bytes it names. An error is ErrBlob (a missing or damaged
// blob: the run is marked broken) or the context's.
func (rt *Runtime) restoreParts(ctx context.Context, rs *runState, key string, parts []harness.Part) error {
	for i := range parts {
		sum, size, ok := blobRef(parts[i].Media)
		if !ok {
			continue
		}
		data, err := rt.blob(ctx, rs, key, i, sum, size)
		if err != nil {
			return err
		}
		m := parts[i].Media
		parts[i].Media = &harness.Media{MIME: m.MIME, Name: m.Name, Data: data}
	}
	return nil
}

// restoreResult restores the references of a tool result DBOS returned.
func (rt *Runtime) restoreResult(ctx context.Context, rs *runState, key string, res *harness.ToolResult) error {
	if res == nil || len(res.Parts) == 0 {
		return nil
	}
	return rt.restoreParts(ctx, rs, key, res.Parts)
}

// restoreResponse restores the references of a model response DBOS
// returned.
func (rt *Runtime) restoreResponse(ctx context.Context, rs *runState, key string, resp *harness.ModelResponse) error {
	if resp == nil {
		return nil
	}
	return rt.restoreParts(ctx, rs, key, resp.Message.Content)
}

// blob returns the size bytes whose SHA-256 is sum, which part i of step
// key references: from the execution's cache, or from the blobs table,
// checked. While the database does not answer it waits, as a marker's
// write does, until ctx ends; a blob that is missing, cannot be opened or
// does not match is ErrBlob, and breaks the run (runState.broken).
func (rt *Runtime) blob(ctx context.Context, rs *runState, key string, i int, sum harness.Hash, size int64) ([]byte, error) {
	if b, ok := rs.blobs.get(sum); ok && int64(len(b)) == size {
		return b, nil
	}
	lost := func(why string) ([]byte, error) {
		err := &Error{Op: "replay", RunID: rs.runID, Class: ErrBlob,
			Msg: fmt.Sprintf("step %s, part %d: %s (%d bytes): %s", key, i, partref.URI(sum), size, why)}
		rs.broke(err)
		return nil, err
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		db, err := rt.auxDB(ctx)
		var stored []byte
		var n int64
		var found bool
		if err == nil {
			n, stored, found, err = db.getBlob(ctx, rs.runID, sum)
		}
		if err == nil {
			if !found {
				return lost("the run has no blob with that hash")
			}
			data, err := db.openBlob(rs.runID, sum, n, stored)
			switch {
			case err != nil:
				return lost(err.Error())
			case int64(len(data)) != size:
				return lost(fmt.Sprintf("the stored blob has %d bytes", len(data)))
			case sha256.Sum256(data) != sum:
				return lost("the stored bytes have another SHA-256")
			}
			rs.blobs.put(sum, data)
			return data, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("durable: run %s: read the bytes of step %s, part %d: %w", rs.runID, key, i, err)
		}
		if wait == 100*time.Millisecond {
			rt.cfg.logger.Warn("durable: cannot read a recorded part's bytes; waiting for the database", "run_id", rs.runID, "step", key, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("durable: run %s: read the bytes of step %s, part %d: %w", rs.runID, key, i, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// blobBind is what a sealed blob is bound to: its row.
func blobBind(runID, hexSum string) string { return runID + "\x00" + hexSum }

// putBlob writes a run's blob, sealed with a key; a blob the run has
// already is left as it is.
func (l *leaseDB) putBlob(ctx context.Context, runID string, sum harness.Hash, data []byte) error {
	h := hex.EncodeToString(sum[:])
	v := data
	if l.seal != nil {
		v = l.seal.sealBytes("blob", data, blobBind(runID, h))
	}
	_, err := l.putBlobStmt.ExecContext(ctx, runID, h, int64(len(data)), v)
	return err
}

// getBlob reads a run's blob as stored: its size and data (sealed or
// not); found is false when the run has none with that hash.
func (l *leaseDB) getBlob(ctx context.Context, runID string, sum harness.Hash) (size int64, data []byte, found bool, err error) {
	err = l.getBlobStmt.QueryRowContext(ctx, runID, hex.EncodeToString(sum[:])).Scan(&size, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, false, nil
	}
	return size, data, err == nil, err
}

// openBlob returns the bytes of a stored blob. A blob stored as it is has
// exactly its size; a sealed one is longer (its header, nonce and tag, in
// base64), which tells them apart whatever the bytes are.
func (l *leaseDB) openBlob(runID string, sum harness.Hash, size int64, stored []byte) ([]byte, error) {
	if int64(len(stored)) == size {
		return stored, nil
	}
	if !bytes.HasPrefix(stored, []byte(sealPrefix)) {
		return nil, fmt.Errorf("the stored blob has %d bytes, its row says %d", len(stored), size)
	}
	kind, plain, err := l.seal.open(string(stored), blobBind(runID, hex.EncodeToString(sum[:])))
	if err != nil {
		return nil, err
	}
	if kind != "blob" {
		return nil, fmt.Errorf("%w: a blob holds a sealed %s", ErrPayloadKey, kind)
	}
	return plain, nil
}
