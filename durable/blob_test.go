package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/partref"
)

// The images of the fixture's "image" and "smallimage" agents: random
// bytes (which no encoding shrinks), each with a distinctive 32-byte
// sequence planted in its middle, which a test looks for in the database.
var (
	toolPlant  = []byte("harnessx:plant:7f3a9c1e5b2d8046!")
	modelPlant = []byte("harnessx:model:7f3a9c1e5b2d8046!")
	toolImage  = sync.OnceValue(func() []byte { return planted(2<<20, 1, toolPlant) })
	modelImage = sync.OnceValue(func() []byte { return planted(1<<20, 2, modelPlant) })
)

func planted(size int, seed uint64, plant []byte) []byte {
	var s [32]byte
	s[0] = byte(seed)
	b := make([]byte, size)
	_, _ = rand.NewChaCha8(s).Read(b)
	copy(b[size/2+7:], plant)
	return b
}

// mediaLine is the counter line the fixture's provider writes for a media
// part of message i of a request.
func mediaLine(i int, mime string, data []byte) string {
	return fmt.Sprintf("media %d %s %x %d", i, mime, sha256.Sum256(data), len(data))
}

// mediaLines returns the counters' media lines.
func mediaLines(c map[string]int) map[string]int {
	out := map[string]int{}
	for l, n := range c {
		if strings.HasPrefix(l, "media ") {
			out[l] = n
		}
	}
	return out
}

// blobRows returns the run's rows of the blobs table: hash → size, and
// hash → stored bytes.
func blobRows(t *testing.T, dir, runID string) (map[string]int64, map[string][]byte) {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	rows, err := db.db.QueryContext(ctxT(t), db.q(`SELECT sha256, size, data FROM {B} WHERE run_id = $1`), runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sizes, data := map[string]int64{}, map[string][]byte{}
	for rows.Next() {
		var h string
		var n int64
		var d []byte
		if err := rows.Scan(&h, &n, &d); err != nil {
			t.Fatal(err)
		}
		sizes[h], data[h] = n, d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sizes, data
}

// execBlobs runs a statement on the runtime's tables of dir ({B} the
// blobs table).
func execBlobs(t *testing.T, dir, query string, args ...any) {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	r, err := db.db.ExecContext(ctxT(t), db.q(query), args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("%s: %d rows", query, n)
	}
}

// stepOutputs returns the recorded outputs of the run's DBOS steps, by
// step name, as stored.
func stepOutputs(t *testing.T, dir, runID string) map[string]string {
	t.Helper()
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	table := "operation_outputs"
	if db.postgres {
		table = "dbos.operation_outputs"
	}
	rows, err := db.db.QueryContext(ctxT(t), db.q(`SELECT function_name, output FROM `+table+` WHERE workflow_uuid = $1 AND output IS NOT NULL`), runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, v string
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// setStepOutput replaces a recorded step's output (DBOS's JSON: base64).
func setStepOutput(t *testing.T, dir, runID, step string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openLeaseDB(ctxT(t), fixtureDSN(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	table := "operation_outputs"
	if db.postgres {
		table = "dbos.operation_outputs"
	}
	r, err := db.db.ExecContext(ctxT(t), db.q(`UPDATE `+table+` SET output = $1 WHERE workflow_uuid = $2 AND function_name = $3`),
		base64.StdEncoding.EncodeToString(data), runID, step)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("step %s: %d rows", step, n)
	}
}

// decodeStep decodes a step output recorded without a key.
func decodeStep(t *testing.T, v string, into any) {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

func hexSum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// waitNoBlobs waits until the finished run's blobs are deleted.
func waitNoBlobs(t *testing.T, dir, runID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sizes, _ := blobRows(t, dir, runID)
		if len(sizes) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished run still has blobs %v", sizes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBlobRecovery: a run whose model returns a 1 MiB image and whose
// tool returns a 2 MiB one is killed after the tool step, and recovered by
// another process. The recovered run's next request carries the same
// bytes (by their SHA-256), the tool ran once, DBOS's step rows hold
// references, not the bytes, and the blobs table holds each image once,
// until the run finished.
func TestBlobRecovery(t *testing.T) {
	t.Setenv(EnvPayloadKey, "") // unsealed: the test looks for the bytes
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "image", "ti", true); !killed {
			t.Fatal("the child was not killed")
		}
		want := map[string]int{
			mediaLine(1, "image/png", modelImage()): 1, // the model's response
			mediaLine(2, "image/png", toolImage()):  1, // the tool's result
		}
		c := counts(t, dir)
		if got := mediaLines(c); !equalCounts(got, want) || c["tool snap ti/tool/1/c1"] != 1 || c["model 2"] != 1 {
			t.Fatalf("before recovery: media %v, want %v; counters %v", got, want, c)
		}
		sizes, _ := blobRows(t, dir, "ti")
		if len(sizes) != 2 || sizes[hexSum(modelImage())] != 1<<20 || sizes[hexSum(toolImage())] != 2<<20 {
			t.Fatalf("blobs %v", sizes)
		}
		outs := stepOutputs(t, dir, "ti")
		if len(outs) < 2 {
			t.Fatalf("step outputs %v", outs)
		}
		for name, v := range outs {
			if len(v) > 64<<10 {
				t.Fatalf("step %s records %d bytes", name, len(v))
			}
		}
		var res harness.ToolResult
		decodeStep(t, outs["ti/tool/1/c1"], &res)
		if len(res.Parts) != 1 || res.Parts[0].Media == nil || res.Parts[0].Media.Data != nil ||
			res.Parts[0].Media.URI != partref.URI(sha256.Sum256(toolImage()))+blobParam+fmt.Sprint(2<<20) || res.Parts[0].Media.MIME != "image/png" {
			t.Fatalf("the recorded tool result: %+v", res)
		}
		// Without a key the blob holds the bytes as they are (the control
		// of TestBlobSealed).
		if raw := rawDatabase(t, dir); !bytes.Contains(raw, toolPlant) && !bytes.Contains(raw, []byte(hex.EncodeToString(toolPlant))) {
			t.Fatal("the database does not hold the image's bytes as they are")
		}

		rt := openFixture(t, dir, true)
		out, err := rt.Wait(ctxT(t), "ti")
		if err != nil || out.Status != harness.StatusCompleted || out.Text != "done: c1=snapped[ok]" {
			t.Fatalf("%+v %v", out, err)
		}
		for l := range want {
			want[l] = 2 // the killed request, and the recovered one
		}
		c = counts(t, dir)
		if got := mediaLines(c); !equalCounts(got, want) || c["tool snap ti/tool/1/c1"] != 1 || c["model 1"] != 1 || c["model 2"] != 2 {
			t.Fatalf("after recovery: media %v, want %v; counters %v", got, want, c)
		}
		// The run's result holds the bytes.
		if m := out.Messages[1].Content[0].Media; m == nil || !bytes.Equal(m.Data, modelImage()) {
			t.Fatalf("the result's assistant message: %+v", out.Messages[1])
		}
		waitNoBlobs(t, dir, "ti")
	})
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBlobSealed: with a payload key the blobs are sealed: the images'
// bytes appear nowhere in the database (SQLite's file, WAL and shared
// memory; a pg_dump), before and after the recovery.
func TestBlobSealed(t *testing.T) {
	t.Setenv(EnvPayloadKey, "k1:"+base64.StdEncoding.EncodeToString(testKey("k1").Key))
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "image", "ts", true); !killed {
			t.Fatal("the child was not killed")
		}
		noPlant := func(when string) {
			raw := rawDatabase(t, dir)
			for _, p := range [][]byte{toolPlant, modelPlant} {
				for _, f := range append(forms(string(p)), hex.EncodeToString(p)) {
					if bytes.Contains(raw, []byte(f)) {
						t.Fatalf("%s: the database holds %q", when, f)
					}
				}
			}
		}
		_, data := blobRows(t, dir, "ts")
		if len(data) != 2 {
			t.Fatalf("%d blobs", len(data))
		}
		for h, d := range data {
			if !bytes.HasPrefix(d, []byte("hx1:k1:blob:")) {
				t.Fatalf("blob %s is not sealed: %.40q", h, d)
			}
		}
		noPlant("before the recovery")
		rt := openFixture(t, dir, true)
		out, err := rt.Wait(ctxT(t), "ts")
		if err != nil || out.Status != harness.StatusCompleted {
			t.Fatalf("%+v %v", out, err)
		}
		want := map[string]int{mediaLine(1, "image/png", modelImage()): 2, mediaLine(2, "image/png", toolImage()): 2}
		if got := mediaLines(counts(t, dir)); !equalCounts(got, want) {
			t.Fatalf("media %v, want %v", got, want)
		}
		waitNoBlobs(t, dir, "ts")
		rt.Close(context.Background())
		noPlant("after the recovery")
	})
}

// TestBlobLost: a blob changed by one byte, or deleted, before the
// recovery fails the recovered run with ErrBlob naming the run, the step
// and the hash; the run does not go on (no model request is made again).
func TestBlobLost(t *testing.T) {
	t.Setenv(EnvPayloadKey, "")
	eachBackend(t, func(t *testing.T, dir string) {
		for _, tc := range []struct {
			name, run, step string
			image           []byte
			damage          func(dir, run string, sum string)
		}{
			{"tampered", "tt", "tt/tool/1/c1", toolImage(), func(dir, run, sum string) {
				_, data := blobRows(t, dir, run)
				d := bytes.Clone(data[sum])
				d[1000] ^= 1
				execBlobs(t, dir, `UPDATE {B} SET data = $1 WHERE run_id = $2 AND sha256 = $3`, d, run, sum)
			}},
			{"deleted", "td", "td/model/1", modelImage(), func(dir, run, sum string) {
				execBlobs(t, dir, `DELETE FROM {B} WHERE run_id = $1 AND sha256 = $2`, run, sum)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := os.Remove(filepath.Join(dir, "killed-image")); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if _, killed := runChild(t, dir, "run", "image", tc.run, true); !killed {
					t.Fatal("the child was not killed")
				}
				sum := hexSum(tc.image)
				tc.damage(dir, tc.run, sum)
				rt := openFixture(t, dir, true)
				out, err := rt.Wait(ctxT(t), tc.run)
				if !errors.Is(err, ErrBlob) || out == nil || out.Status != harness.StatusFailed {
					t.Fatalf("%+v %v", out, err)
				}
				for _, s := range []string{tc.run, tc.step, sum} {
					if !strings.Contains(err.Error(), s) {
						t.Fatalf("the error does not name %q: %v", s, err)
					}
				}
				t.Log(err)
				c := counts(t, dir)
				if c["tool snap "+tc.run+"/tool/1/c1"] != 1 {
					t.Fatalf("counters %v", c)
				}
				rt.Close(context.Background())
			})
		}
		// Two runs, each with one request of model step 2, killed.
		if c := counts(t, dir); c["model 2"] != 2 {
			t.Fatalf("a broken run requested again: %v", c)
		}
	})
}

// TestBlobThreshold: a part below blobThreshold stays inline in the
// step's record, one of blobThreshold bytes is a reference; a recovered
// run replays both.
func TestBlobThreshold(t *testing.T) {
	t.Setenv(EnvPayloadKey, "")
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "smallimage", "tm", true); !killed {
			t.Fatal("the child was not killed")
		}
		img := toolImage()
		small, big := img[:blobThreshold-1], img[1:blobThreshold+1]
		var res harness.ToolResult
		decodeStep(t, stepOutputs(t, dir, "tm")["tm/tool/1/c1"], &res)
		if len(res.Parts) != 2 || !bytes.Equal(res.Parts[0].Media.Data, small) || res.Parts[0].Media.URI != "" {
			t.Fatalf("the small part is not inline: %+v", res.Parts)
		}
		if sum, size, ok := blobRef(res.Parts[1].Media); !ok || hex.EncodeToString(sum[:]) != hexSum(big) || size != blobThreshold || res.Parts[1].Media.MIME != "application/pdf" {
			t.Fatalf("the large part is not a reference: %+v", res.Parts[1].Media)
		}
		if sizes, _ := blobRows(t, dir, "tm"); len(sizes) != 1 || sizes[hexSum(big)] != blobThreshold {
			t.Fatalf("blobs %v", sizes)
		}
		rt := openFixture(t, dir, true)
		if out, err := rt.Wait(ctxT(t), "tm"); err != nil || out.Status != harness.StatusCompleted {
			t.Fatalf("%+v %v", out, err)
		}
		want := map[string]int{mediaLine(2, "image/png", small): 2, mediaLine(2, "application/pdf", big): 2}
		if got := mediaLines(counts(t, dir)); !equalCounts(got, want) {
			t.Fatalf("media %v, want %v", got, want)
		}
	})
}

// TestBlobOldRecordReplays: steps recorded before references (the bytes
// inline in DBOS's step output, no blob) replay as they are.
func TestBlobOldRecordReplays(t *testing.T) {
	t.Setenv(EnvPayloadKey, "")
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "image", "to", true); !killed {
			t.Fatal("the child was not killed")
		}
		outs := stepOutputs(t, dir, "to")
		var resp harness.ModelResponse
		decodeStep(t, outs["to/model/1"], &resp)
		resp.Message.Content[0].Media = &harness.Media{MIME: "image/png", Data: modelImage()}
		setStepOutput(t, dir, "to", "to/model/1", &resp)
		var res harness.ToolResult
		decodeStep(t, outs["to/tool/1/c1"], &res)
		res.Parts[0].Media = &harness.Media{MIME: "image/png", Data: toolImage()}
		setStepOutput(t, dir, "to", "to/tool/1/c1", &res)
		execBlobs(t, dir, `DELETE FROM {B} WHERE run_id = $1 AND sha256 = $2`, "to", hexSum(modelImage()))
		execBlobs(t, dir, `DELETE FROM {B} WHERE run_id = $1 AND sha256 = $2`, "to", hexSum(toolImage()))

		rt := openFixture(t, dir, true)
		if out, err := rt.Wait(ctxT(t), "to"); err != nil || out.Status != harness.StatusCompleted {
			t.Fatalf("%+v %v", out, err)
		}
		want := map[string]int{mediaLine(1, "image/png", modelImage()): 2, mediaLine(2, "image/png", toolImage()): 2}
		if got := mediaLines(counts(t, dir)); !equalCounts(got, want) {
			t.Fatalf("media %v, want %v", got, want)
		}
	})
}

func TestBlobRef(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	ref := blobURI(sum, 17)
	if got, size, ok := blobRef(&harness.Media{MIME: "image/png", URI: ref}); !ok || got != sum || size != 17 {
		t.Fatalf("%s: %x %d %v", ref, got, size, ok)
	}
	for _, m := range []*harness.Media{
		nil,
		{URI: partref.URI(sum)},       // a part reference of a tool's, not the runtime's
		{URI: ref, Data: []byte("x")}, // bytes inline
		{URI: ref, FileID: "f"},       // a file
		{URI: "https://example.com/a.png" + blobParam + "1"}, // not an artifact
		{URI: partref.URI(sum)[:20] + blobParam + "1"},       // a bad hash
		{URI: partref.URI(sum) + blobParam + "-1"},
		{URI: partref.URI(sum) + blobParam + "01"},
		{URI: partref.URI(sum) + blobParam},
	} {
		if _, _, ok := blobRef(m); ok {
			t.Errorf("%+v is taken as a reference", m)
		}
	}
}

// TestBlobTable: the blobs table's rows, sealed or not, whatever bytes
// they hold (a plain blob may start like a sealed one); a sealed blob
// changed by one byte does not open; RetireKey counts sealed blobs.
func TestBlobTable(t *testing.T) {
	t.Setenv(EnvPayloadKey, "")
	eachBackend(t, func(t *testing.T, dir string) {
		ctx := ctxT(t)
		k1, k2 := testKey("k1"), testKey("k2")
		rt, err := Open(ctx, fixtureDSN(dir), WithLogger(quietLogger()), WithPayloadKey(k1))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		db, err := rt.auxDB(ctx)
		if err != nil {
			t.Fatal(err)
		}
		data := append([]byte(sealPrefix+"k1:blob:"), modelImage()[:blobThreshold]...)
		sum := sha256.Sum256(data)
		read := func(run string) ([]byte, error) {
			t.Helper()
			size, stored, found, err := db.getBlob(ctx, run, sum)
			if err != nil || !found {
				t.Fatalf("get: %v %v", found, err)
			}
			return db.openBlob(run, sum, size, stored)
		}
		// Sealed.
		if err := db.putBlob(ctx, "sealed", sum, data); err != nil {
			t.Fatal(err)
		}
		if got, err := read("sealed"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("sealed: %v", err)
		}
		// Stored as it is (written without a key).
		seal := db.seal
		db.seal = nil
		if err := db.putBlob(ctx, "plain", sum, data); err != nil {
			t.Fatal(err)
		}
		db.seal = seal
		if got, err := read("plain"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("plain: %v", err)
		}
		// A second write of the same blob changes nothing.
		if err := db.putBlob(ctx, "plain", sum, data); err != nil {
			t.Fatal(err)
		}
		if _, stored := blobRows(t, dir, "plain"); !bytes.Equal(stored[hex.EncodeToString(sum[:])], data) {
			t.Fatal("a second write replaced the blob")
		}
		// One byte of a sealed blob changed, or a blob moved to another run.
		_, stored := blobRows(t, dir, "sealed")
		d := bytes.Clone(stored[hex.EncodeToString(sum[:])])
		d[len(d)/2] ^= 1
		execBlobs(t, dir, `UPDATE {B} SET data = $1 WHERE run_id = 'sealed'`, d)
		if _, err := read("sealed"); !errors.Is(err, ErrPayloadKey) {
			t.Fatalf("a damaged sealed blob: %v", err)
		}
		execBlobs(t, dir, `UPDATE {B} SET data = $1 WHERE run_id = 'plain'`, stored[hex.EncodeToString(sum[:])])
		if _, err := read("plain"); !errors.Is(err, ErrPayloadKey) {
			t.Fatalf("another run's sealed blob: %v", err)
		}
		rt.Close(context.Background())

		// RetireKey finds the blobs sealed with k1.
		rt, err = Open(ctx, fixtureDSN(dir), WithLogger(quietLogger()), WithPayloadKey(k2, k1))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(context.Background())
		if err := rt.RetireKey(ctx, "k1"); !errors.Is(err, ErrPayloadKey) || !strings.Contains(err.Error(), "2 in harnessx") || !strings.Contains(err.Error(), "blobs.data") {
			t.Fatalf("retire a key that seals blobs: %v", err)
		}
		execBlobs(t, dir, `DELETE FROM {B} WHERE run_id = 'sealed'`)
		execBlobs(t, dir, `DELETE FROM {B} WHERE run_id = 'plain'`)
		if err := rt.RetireKey(ctx, "k1"); err != nil {
			t.Fatalf("retire an unused key: %v", err)
		}
	})
}

// TestBlobNoPartsCostNothing: a step without large parts records and
// returns its value as it is, without an allocation.
func TestBlobNoPartsCostNothing(t *testing.T) {
	rt, rs, ctx := &Runtime{}, &runState{runID: "r"}, context.Background()
	small := harness.ImagePart(make([]byte, blobThreshold-1), "image/png")
	res := &harness.ToolResult{CallID: "c1", Name: "t", Content: "ok", Parts: []harness.Part{harness.Text("x"), small}}
	resp := reply("done")
	resp.Message.Content = append(resp.Message.Content, small)
	allocs := testing.AllocsPerRun(100, func() {
		if rt.recordResult(ctx, rs, "r/tool/1/c1", res) != res || rt.recordResponse(ctx, rs, "r/model/1", resp) != resp {
			t.Fatal("copied")
		}
		if rt.restoreResult(ctx, rs, "r/tool/1/c1", res) != nil || rt.restoreResponse(ctx, rs, "r/model/1", resp) != nil {
			t.Fatal("restore failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
