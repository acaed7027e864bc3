package spill

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

var idRE = regexp.MustCompile(`res_[0-9a-f]{24}`)
var shaRE = regexp.MustCompile(`[0-9a-f]{64}`)

// stable replaces generated ids and hashes so output can be compared.
func stable(s string) string {
	return shaRE.ReplaceAllString(idRE.ReplaceAllString(s, "res_ID"), "SHA256")
}

// newExt returns an extension whose temporary store lives in a test
// directory, torn down at the end of the test.
func newExt(t testing.TB, opts ...Option) *Extension {
	t.Helper()
	e := New(append([]Option{WithTempParent(t.TempDir())}, opts...)...)
	t.Cleanup(func() { _ = e.Teardown(context.Background()) })
	return e
}

func spillString(t testing.TB, e *Extension, tool, content string) Result {
	t.Helper()
	r, err := e.Spill(context.Background(), tool, strings.NewReader(content))
	if err != nil {
		t.Fatalf("Spill: %v", err)
	}
	return r
}

func read(e *Extension, a map[string]any) (string, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	return e.Read(context.Background(), b)
}

// csvData is an orders export with n rows.
func csvData(n int) string {
	var b strings.Builder
	b.WriteString("order_id,customer,country,amount,status\n")
	countries := []string{"PT", "FR", "DE", "JP", "BR"}
	statuses := []string{"paid", "refunded", "pending"}
	for i := range n {
		fmt.Fprintf(&b, "%d,customer %d,%s,%d.%02d,%s\n", 1000+i, i%97, countries[i%5], 10+i%50, i%100, statuses[i%3])
	}
	return b.String()
}

// jsonRows are the rows of csvData as JSON objects (amount a number).
func jsonRows(n int) []string {
	countries := []string{"PT", "FR", "DE", "JP", "BR"}
	statuses := []string{"paid", "refunded", "pending"}
	rows := make([]string, n)
	for i := range n {
		rows[i] = fmt.Sprintf(`{"order_id":%d,"customer":"customer %d","country":%q,"amount":%d.%02d,"status":%q,"vip":%t}`,
			1000+i, i%97, countries[i%5], 10+i%50, i%100, statuses[i%3], i%10 == 0)
	}
	return rows
}

func jsonArrayData(n int) string { return "[\n" + strings.Join(jsonRows(n), ",\n") + "\n]\n" }
func jsonlData(n int) string     { return strings.Join(jsonRows(n), "\n") + "\n" }

// textData is a log of n lines; every 1000th line (from line 500) holds
// "zanzibar".
func textData(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i%1000 == 500 {
			fmt.Fprintf(&b, "%06d WARN shipment %d routed via zanzibar hub\n", i, i)
			continue
		}
		fmt.Fprintf(&b, "%06d INFO request ok path=/api/items/%d latency=%dms\n", i, i, i%997)
	}
	return b.String()
}
