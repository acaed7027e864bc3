package durable

import (
	"bytes"
	"context"
	"strconv"
	"testing"
)

// BenchmarkDurableRunSealed is BenchmarkDurableRun with a payload key:
// every payload handed to DBOS is sealed (AES-256-GCM) and opened again.
// Compare with BenchmarkDurableRun; the target is at most 10% more.
func BenchmarkDurableRunSealed(b *testing.B) {
	key := WithPayloadKey(PayloadKey{ID: "bench", Key: bytes.Repeat([]byte{9}, 32)})
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			rt, err := Open(ctx, benchDSN(b, backend), WithLogger(quietLogger()), key)
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(ctx)
			if err := rt.Register("bench", benchFactory()); err != nil {
				b.Fatal(err)
			}
			if err := rt.Launch(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				res, err := rt.Run(ctx, "bench", "go", WithRunID("b"+strconv.Itoa(i)))
				if err != nil || res.Text != "done" {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
