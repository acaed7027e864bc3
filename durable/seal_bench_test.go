package durable

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness/harnesstest"
)

// BenchmarkDurableRunSealed is BenchmarkDurableRun with a payload key:
// every payload handed to DBOS is sealed (AES-256-GCM) and opened again.
// Compare with BenchmarkDurableRun; the target is at most 10% more.
func BenchmarkDurableRunSealed(b *testing.B) {
	key := WithPayloadKey(PayloadKey{ID: "bench", Key: bytes.Repeat([]byte{9}, 32)})
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDurableRun(b, benchDSN(b, backend), benchFactory(), key) })
	}
}

// BenchmarkSealPayload is the CPU cost of sealing and opening one payload
// (a model step's response with a tool call) against DBOS's own JSON
// encoding of it: a run of BenchmarkDurableRun encodes five payloads and
// decodes one.
func BenchmarkSealPayload(b *testing.B) {
	resp := modelResult{ModelResponse: callMsg(harnesstest.Call("c1", "noop", map[string]any{"q": strings.Repeat("x", 200)}))}
	b.Run("sealed", func(b *testing.B) {
		s, err := newSealer([]PayloadKey{{ID: "bench", Key: bytes.Repeat([]byte{9}, 32)}})
		if err != nil {
			b.Fatal(err)
		}
		z := sealSerializer{s}
		b.ReportAllocs()
		for b.Loop() {
			enc, err := z.Encode(resp)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := z.Decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dbos-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(resp)
			if err != nil {
				b.Fatal(err)
			}
			enc := base64.StdEncoding.EncodeToString(data)
			raw, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				b.Fatal(err)
			}
			var out modelResult
			if err := json.Unmarshal(raw, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
