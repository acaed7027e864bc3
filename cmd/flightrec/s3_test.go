package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/harnessx/harnessx/cmd/flightrec/internal/s3export"
	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/spill/s3store"
	"github.com/harnessx/harnessx/extensions/spill/s3store/s3test"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// s3Recording runs an agent with the flight recorder whose spill
// extension stores in the gateway's bucket under "artifacts", spilling
// two results; it returns the recording root and the results.
func s3Recording(t *testing.T, g *s3test.Gateway, bucket string) (string, []spill.Meta) {
	t.Helper()
	root := t.TempDir()
	env := map[string]string{}
	for _, kv := range g.Env(bucket, "artifacts") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg, err := s3store.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	store, err := s3store.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(context.Background())
	sp := spill.New(spill.WithStore(store))
	big := func(name, line string, n int) *harness.Tool {
		return &harness.Tool{Name: name, Description: "big", InputSchema: json.RawMessage(`{"type":"object"}`),
			Handler: func(context.Context, json.RawMessage) (string, error) { return strings.Repeat(line, n), nil }}
	}
	a, err := harness.New(harness.WithName("worker"), harness.WithSessionID("s3-session"),
		harness.WithProvider(harnesstest.NewScriptedProvider(
			harnesstest.CallTool("c1", "logs", map[string]any{}),
			harnesstest.CallTool("c2", "rows", map[string]any{}),
			harnesstest.Reply("done"))),
		harness.WithTools(big("logs", "INFO request served in 12ms\n", 3000), big("rows", "id,amount\n7,12.50\n", 2500)),
		harness.WithExtensions(sp, flight.New(flight.WithDir(root))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	res := sp.Results()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results spilled", len(res))
	}
	return root, res
}

// untar returns the members of a .tar.gz.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = b
	}
}

// TestExportS3 exports a recording whose spilled results live in an S3
// artifact store: the bundle is written to s3://, fetched results are in
// it byte for byte, a deleted one is named missing, a second export to
// the same key is refused, and no credential is in the bundle or the
// command's output.
func TestExportS3(t *testing.T) {
	g := s3test.Start(t)
	bucket := g.Bucket(t)
	root, res := s3Recording(t, g, bucket)
	env := map[string]string{}
	for _, kv := range g.Env(bucket, "artifacts") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	runEnv := func(args ...string) result {
		var out, errb bytes.Buffer
		a := newApp(context.Background(), &out, &errb)
		a.getenv = func(k string) string { return env[k] }
		a.s3 = s3export.Support{}
		err := a.run(args)
		return result{out.String(), errb.String(), err}
	}
	target := "s3://" + bucket + "/incidents/2026/inc-1.tar.gz"
	r := runEnv("export", "--dir", root, "--include-artifacts", "-o", target)
	if r.err != nil {
		t.Fatalf("export: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stdout, "wrote "+target) || !strings.Contains(r.stdout, "2 artifacts") {
		t.Errorf("stdout: %q", r.stdout)
	}
	obj, err := g.Client(t).GetObject(context.Background(), bucket, "incidents/2026/inc-1.tar.gz", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := flight.ReadBundle(bytes.NewReader(data), flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Verify(); err != nil {
		t.Fatalf("the bundle on S3 does not verify: %v", err)
	}
	members := untar(t, data)
	for _, m := range res {
		got, ok := members["artifacts/"+m.ArtifactName()]
		if !ok {
			t.Fatalf("bundle lacks %s; members: %v", m.ArtifactName(), keys(members))
		}
		want := strings.Repeat("INFO request served in 12ms\n", 3000)
		if m.Tool == "rows" {
			want = strings.Repeat("id,amount\n7,12.50\n", 2500)
		}
		if string(got) != want {
			t.Errorf("%s: %d bytes, not the stored result", m.ArtifactName(), len(got))
		}
	}
	for _, secret := range []string{g.SecretKey, g.AccessKey} {
		for name, content := range members {
			if bytes.Contains(content, []byte(secret)) {
				t.Errorf("member %s holds a credential", name)
			}
		}
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("the command's output holds a credential")
		}
	}

	// Written once: the same key again is refused.
	if r := runEnv("export", "--dir", root, "-o", target); r.err == nil || !strings.Contains(r.err.Error(), "exists already") {
		t.Errorf("second export to %s: %v", target, r.err)
	}

	// A result deleted from the store is named missing, with the reason.
	store, err := s3store.New(s3store.Config{Endpoint: g.Endpoint, Bucket: bucket, Prefix: "artifacts", AccessKeyID: g.AccessKey, SecretAccessKey: g.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(context.Background(), res[0].ID); err != nil {
		t.Fatal(err)
	}
	store.Close(context.Background())
	out := filepath.Join(t.TempDir(), "local.tar.gz")
	r = runEnv("export", "--dir", root, "--include-artifacts", "-o", out)
	if r.err != nil {
		t.Fatalf("export: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "artifact "+res[0].ArtifactName()+" not included: ") || !strings.Contains(r.stderr, "not found") {
		t.Errorf("stderr does not name the deleted result: %q", r.stderr)
	}
	lb, err := flight.ReadBundleFile(out, flight.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lb.Artifacts(); len(got) != 1 || !strings.Contains(got[0], res[1].ID) {
		t.Errorf("local bundle artifacts %v, want only %s", got, res[1].ID)
	}
	if missing := lb.Manifest.Missing(); len(missing) != 1 || missing[0].Name != res[0].ArtifactName() {
		t.Errorf("manifest missing %v", missing)
	}
}

func TestExportS3BadTarget(t *testing.T) {
	root := fixture(t)
	for _, s3 := range []s3Support{s3export.Support{}, nil} {
		for _, target := range []string{"s3://bucket", "s3://bucket/dir/", "s3://user:pw@bucket/x.tar.gz"} {
			var out, errb bytes.Buffer
			a := newApp(context.Background(), &out, &errb)
			a.s3 = s3
			err := a.run([]string{"export", "--dir", root, "--recording", "alpha", "-o", target})
			if err == nil {
				t.Errorf("%s: no error", target)
			} else if strings.Contains(err.Error(), "pw@") {
				t.Errorf("%s: the error shows the password: %v", target, err)
			}
		}
	}
}

// TestExportS3NotBuilt is s3:// given to a flightrec built without S3
// support: export fails at once, naming the build that has it, and
// --include-artifacts names each result held in S3 as not included, with
// the same advice, while the rest of the bundle is written.
func TestExportS3NotBuilt(t *testing.T) {
	var out, errb bytes.Buffer
	a := newApp(context.Background(), &out, &errb)
	a.s3 = nil
	err := a.run([]string{"export", "--dir", t.TempDir(), "-o", "s3://bucket/incidents/x.tar.gz"})
	want := "flightrec: export: cannot write to S3: this flightrec was built without S3 support, which keeps the S3 client out of the default build; " +
		"install one with it from a clone of harnessx: go install -tags s3 ./cmd/flightrec (or export to a file and upload that)"
	if err == nil || err.Error() != want {
		t.Errorf("err\n%v\nwant\n%s", err, want)
	}

	g := s3test.Start(t)
	bucket := g.Bucket(t)
	root, res := s3Recording(t, g, bucket)
	env := map[string]string{}
	for _, kv := range g.Env(bucket, "artifacts") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	out.Reset()
	errb.Reset()
	a = newApp(context.Background(), &out, &errb)
	a.s3 = nil
	a.getenv = func(k string) string { return env[k] }
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := a.run([]string{"export", "--dir", root, "--include-artifacts", "-o", file}); err != nil {
		t.Fatalf("export: %v\n%s", err, errb.String())
	}
	for _, m := range res {
		if want := "flightrec: export: artifact " + m.ArtifactName() + " not included: in the artifact store HARNESSX_ARTIFACTS names; " +
			"this flightrec was built without S3 support"; !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if !strings.Contains(out.String(), "wrote "+file) {
		t.Errorf("stdout: %q", out.String())
	}
	if envArtifacts != s3store.EnvArtifacts {
		t.Errorf("envArtifacts %q, s3store reads %q", envArtifacts, s3store.EnvArtifacts)
	}
}

// TestS3BuildTag keeps the S3 client out of the default build: go build
// ./cmd/flightrec does not compile minio-go, -tags s3 does, and the two
// binaries answer an s3:// output accordingly.
func TestS3BuildTag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flightrec twice")
	}
	const minio = "github.com/minio/minio-go/v7"
	dir := t.TempDir()
	root := fixture(t)
	for _, tags := range []string{"", "s3"} {
		deps, err := exec.Command("go", "list", "-deps", "-tags", tags, ".").Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v", tags, err)
		}
		if got := bytes.Contains(deps, []byte(minio)); got != (tags == "s3") {
			t.Errorf("tags %q: compiles %s: %v", tags, minio, got)
		}
		bin := filepath.Join(dir, "flightrec"+tags)
		if out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %q: %v\n%s", tags, err, out)
		}
		out, _ := exec.Command(bin, "export", "--dir", root, "--recording", "alpha", "-o", "s3://bucket").CombinedOutput()
		// With S3 support the URL itself is the problem; without, the build.
		want := "names no object"
		if tags == "" {
			want = "built without S3 support"
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("tags %q: export to s3://bucket said %q, want %q", tags, out, want)
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
