package s3store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
)

// BenchmarkS3Search is a read_result regex search for a rare word over a
// 100 MB text result stored on the versitygw gateway (posix backend on
// the local disk, loopback HTTP), spilled once outside the timed loop.
// Compare its MB/s with spill's BenchmarkSearchFloor (bytes.Index in
// memory) and BenchmarkSearch (the same search on a local file).
func BenchmarkS3Search(b *testing.B) {
	g := s3test.Start(b)
	s := newStore(b, g, g.Bucket(b))
	ext := spill.New(spill.WithStore(s))
	defer ext.Teardown(context.Background())
	data, rare := logTextEvery(100<<20, 10_000)
	r, err := ext.Spill(context.Background(), "logs", bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	data = nil
	req, _ := json.Marshal(map[string]any{"id": r.ID, "op": "search", "pattern": "zanzibar", "max_matches": 1000})
	want := fmt.Sprintf(": %d matching lines\n", rare)
	ctx := context.Background()
	b.SetBytes(r.Size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := ext.Read(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(out, want) {
			b.Fatalf("want %q in output:\n%.500s", want, out)
		}
	}
}
