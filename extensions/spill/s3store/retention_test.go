package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
)

// TestDeleteOnClose: a store that deletes at Close removes what it wrote
// and nothing else; one that keeps leaves everything.
func TestDeleteOnClose(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	ctx := context.Background()
	keep := newStore(t, g, bucket)
	if _, err := keep.Put(ctx, id1, bytes.NewReader(randomBytes(1000))); err != nil {
		t.Fatal(err)
	}
	if err := keep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	del := newStore(t, g, bucket, func(c *s3store.Config) { c.Retention.DeleteOnClose = true })
	if _, err := del.Put(ctx, id2, bytes.NewReader(randomBytes(2000))); err != nil {
		t.Fatal(err)
	}
	if err := del.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := del.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := del.Open(ctx, id2); !errors.Is(err, s3store.ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
	check := newStore(t, g, bucket)
	if _, err := check.Stat(ctx, id1); err != nil {
		t.Errorf("the kept result is gone: %v", err)
	}
	if _, err := check.Stat(ctx, id2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted result: %v", err)
	}
	if n := len(objects(t, g, bucket, "agents/test/")); n != 3 {
		t.Errorf("%d objects left, want the three of the kept result", n)
	}
}

// TestExpire: results older than MaxAge go, then the oldest until the
// content fits MaxBytes; content shared by a kept id stays.
func TestExpire(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	ctx := context.Background()
	s := newStore(t, g, bucket)
	old := randomBytes(10_000)
	if _, err := s.Put(ctx, id1, bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3100 * time.Millisecond) // object times have a one-second resolution
	if _, err := s.Put(ctx, id2, bytes.NewReader(randomBytes(30_000))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := s.Put(ctx, id3, bytes.NewReader(randomBytes(20_000))); err != nil {
		t.Fatal(err)
	}
	// By age: id1 is at least 4.2s old, id2 at most about 2.3s.
	byAge := newStore(t, g, bucket, func(c *s3store.Config) { c.Retention.MaxAge = 3500 * time.Millisecond })
	st, err := byAge.Expire(ctx)
	if err != nil || st.Results != 1 || st.Objects != 1 || st.Bytes != 10_000 || st.Remaining != 2 || st.RemainingBytes != 50_000 {
		t.Fatalf("expire by age: %+v, %v", st, err)
	}
	if _, err := s.Stat(ctx, id1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("expired result: %v", err)
	}
	// By bytes: 50,000 stored, 25,000 allowed: the older id2 goes.
	bySize := newStore(t, g, bucket, func(c *s3store.Config) { c.Retention.MaxBytes = 25_000; c.Retention.ExpireOnClose = true })
	if err := bySize.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check := newStore(t, g, bucket)
	if _, err := check.Stat(ctx, id2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("oldest result past MaxBytes: %v", err)
	}
	if info, err := check.Stat(ctx, id3); err != nil || info.Size != 20_000 {
		t.Errorf("newest result: %+v, %v", info, err)
	}
	if n := len(objects(t, g, bucket, "agents/test/")); n != 3 {
		t.Errorf("%d objects left, want the three of id3", n)
	}
}
