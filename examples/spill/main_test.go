package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	if err := run(t.Context(), &out, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second { // about 1 s alone; generous for -race on a shared machine
		t.Errorf("took %v", d)
	}
	s := out.String()
	for _, want := range []string{
		"[result spilled: export_orders returned 4,757,244 bytes in 80,001 lines",
		"type: csv",
		"columns: order_id, placed_at, customer, country, amount, status",
		"3 matching lines; stopped at max_matches=3",
		"4244: 104242,2026-07-15T18:42:00Z,customer-11502,PT,206.42,disputed",
		"lines 4242 to 4244 of 80001",
		"count: 960 of 80000 rows where country eq \"JP\" and status eq \"refunded\" and amount gt 250",
		"stored: res_",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if len(s) > 20_000 {
		t.Errorf("the transcript is %d bytes: the export leaked into it", len(s))
	}
}

// TestRunS3 runs the demo against the real versitygw gateway: the export
// is stored in the bucket (content under its SHA-256, an index for the
// id) and read back with the same answers as on disk.
func TestRunS3(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	env := map[string]string{}
	for _, kv := range g.Env(bucket, "demo") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var out bytes.Buffer
	if err := run(t.Context(), &out, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"artifact store: s3://" + bucket + "/demo",
		"[result spilled: export_orders returned 4,757,244 bytes in 80,001 lines",
		"4244: 104242,2026-07-15T18:42:00Z,customer-11502,PT,206.42,disputed",
		"count: 960 of 80000 rows where country eq \"JP\" and status eq \"refunded\" and amount gt 250",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, g.SecretKey) {
		t.Error("the output shows the secret key")
	}
	id := regexp.MustCompile(`stored: (res_[0-9a-f]{24})`).FindStringSubmatch(s)
	if id == nil {
		t.Fatalf("no stored result in the output:\n%s", s)
	}
	n := 0
	for o := range g.Client(t).ListObjects(t.Context(), bucket, minio.ListObjectsOptions{Prefix: "demo/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if strings.HasPrefix(o.Key, "demo/blobs/sha256/") && o.Size == 4_757_244 {
			n++
		}
		if o.Key == "demo/ids/"+id[1] {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the bucket lacks the content or the index of %s", id[1])
	}

	// A wrong secret stops the demo with the reason, before any run.
	env["AWS_SECRET_ACCESS_KEY"] = "wrong"
	err := run(t.Context(), &bytes.Buffer{}, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Errorf("wrong secret: %v", err)
	}
}
