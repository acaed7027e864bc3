package s3store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
)

const (
	id1 = "res_000000000000000000000001"
	id2 = "res_000000000000000000000002"
	id3 = "res_000000000000000000000003"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// objects lists the keys under prefix in bucket.
func objects(t *testing.T, g *s3test.Gateway, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range g.Client(t).ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys
}

// TestRoundTrip stores results of several sizes (in memory, spooled to a
// file, multipart) and reads every byte back.
func TestRoundTrip(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	s := newStore(t, g, bucket, func(c *s3store.Config) { c.SpoolMemory = 1 << 20 })
	ctx := context.Background()
	for i, size := range []int{1, 100 << 10, 3 << 20, 20 << 20} {
		id := "res_00000000000000000000010" + string(rune('0'+i))
		data := randomBytes(size)
		n, err := s.Put(ctx, id, bytes.NewReader(data))
		if err != nil || n != int64(size) {
			t.Fatalf("Put %d bytes: %d, %v", size, n, err)
		}
		f, err := s.Open(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		f.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d of %d bytes (equal %v): %v", len(got), size, bytes.Equal(got, data), err)
		}
		info, err := s.Stat(ctx, id)
		if err != nil || info.Size != int64(size) || info.Path != "" || info.Stamp == "" || info.Stamp != f.Stamp() {
			t.Fatalf("Stat = %+v, %v (file stamp %q)", info, err, f.Stamp())
		}
		if _, err := s.Put(ctx, id, strings.NewReader("other")); !errors.Is(err, spill.ErrExists) {
			t.Fatalf("second Put of %s: %v, want ErrExists", id, err)
		}
		key := "agents/test/blobs/sha256/" + sum(data)
		obj, err := g.Client(t).GetObject(ctx, bucket, key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(obj)
		obj.Close()
		if err != nil || !bytes.Equal(raw, data) {
			t.Fatalf("object %s does not hold the content: %v", key, err)
		}
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 4 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if _, err := s.Open(ctx, id3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing id: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.Put(ctx, "../etc/passwd", strings.NewReader("x")); !errors.Is(err, spill.ErrInvalidID) {
		t.Errorf("Put of an invalid id: %v", err)
	}
}

// TestContentAddressed checks that the same bytes stored under two ids
// (a replayed tool step) make one content object, transferred once, and
// that deleting keeps the content while an id refers to it.
func TestContentAddressed(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	c := newCounter()
	s := newStore(t, g, bucket, func(cfg *s3store.Config) { cfg.Transport = c })
	ctx := context.Background()
	data := randomBytes(2 << 20)
	if _, err := s.Put(ctx, id1, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	c.reset()
	if _, err := s.Put(ctx, id2, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.requests() {
		if strings.HasPrefix(r, "PUT") && strings.Contains(r, "/blobs/") {
			t.Errorf("the replayed Put uploaded the content again: %s", r)
		}
	}
	blobs := objects(t, g, bucket, "agents/test/blobs/")
	if want := []string{"agents/test/blobs/sha256/" + sum(data)}; !slices.Equal(blobs, want) {
		t.Fatalf("content objects %v, want %v", blobs, want)
	}
	if err := s.Delete(ctx, id1); err != nil {
		t.Fatal(err)
	}
	f, err := s.Open(ctx, id2)
	if err != nil {
		t.Fatalf("content shared with a deleted id is gone: %v", err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, data) {
		t.Fatal("content changed")
	}
	if err := s.Delete(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, g, bucket, "agents/test/"); len(left) != 0 {
		t.Fatalf("objects left after deleting every id: %v", left)
	}
	if err := s.Delete(ctx, id2); err != nil {
		t.Errorf("deleting a missing id: %v", err)
	}
}

// TestCreateRace412 makes Put miss the existing content (its HEAD is
// answered 404 by the transport), so that it uploads with If-None-Match:
// * and the server answers 412: Put must count that as success.
func TestCreateRace412(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	ctx := context.Background()
	data := randomBytes(300 << 10)
	if _, err := newStore(t, g, bucket).Put(ctx, id1, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	c := newCounter()
	c.hideBlobs.Store(true)
	s := newStore(t, g, bucket, func(cfg *s3store.Config) { cfg.Transport = c })
	if _, err := s.Put(ctx, id2, bytes.NewReader(data)); err != nil {
		t.Fatalf("Put after a lost create race: %v", err)
	}
	saw412 := false
	for _, r := range c.requests() {
		if strings.HasPrefix(r, "PUT") && strings.Contains(r, "/blobs/") && strings.HasSuffix(r, " 412") {
			saw412 = true
		}
	}
	if !saw412 {
		t.Fatalf("no 412 answer to the content upload; requests:\n%s", strings.Join(c.requests(), "\n"))
	}
	c.hideBlobs.Store(false)
	f, err := s.Open(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, data) {
		t.Fatal("content changed")
	}
	if n := len(objects(t, g, bucket, "agents/test/blobs/")); n != 1 {
		t.Fatalf("%d content objects, want 1", n)
	}
}

// TestSeek reads ranges in any order and compares them with the data.
func TestSeek(t *testing.T) {
	g := s3test.Start(t)
	s := newStore(t, g, g.Bucket(t), func(c *s3store.Config) { c.MinReadAhead = 4 << 10; c.MaxReadAhead = 64 << 10 })
	ctx := context.Background()
	data := randomBytes(1 << 20)
	if _, err := s.Put(ctx, id1, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	f, err := s.Open(ctx, id1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range []struct{ off, n int64 }{{900_000, 5000}, {10, 100}, {10_000, 300_000}, {1<<20 - 7, 7}, {20, 30_000}} {
		if _, err := f.Seek(r.off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, r.n)
		if _, err := io.ReadFull(f, got); err != nil {
			t.Fatalf("read %d at %d: %v", r.n, r.off, err)
		}
		if !bytes.Equal(got, data[r.off:r.off+r.n]) {
			t.Fatalf("bytes %d..%d differ", r.off, r.off+r.n)
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d, %v", n, err)
	}
	if pos, err := f.Seek(-10, io.SeekEnd); err != nil || pos != 1<<20-10 {
		t.Fatalf("SeekEnd: %d, %v", pos, err)
	}
}
