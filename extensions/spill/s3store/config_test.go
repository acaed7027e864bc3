package s3store_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/extensions/spill/s3store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	c, err := s3store.ConfigFromEnv(env(map[string]string{
		"HARNESSX_ARTIFACTS":           "s3://team-bucket/agents/prod/",
		"AWS_ACCESS_KEY_ID":            "AKIAIOSFODNN7EXAMPLE",
		"AWS_SECRET_ACCESS_KEY":        secret,
		"AWS_REGION":                   "eu-west-3",
		"AWS_ENDPOINT_URL_S3":          "http://127.0.0.1:7070",
		"HARNESSX_ARTIFACTS_ON_CLOSE":  "delete",
		"HARNESSX_ARTIFACTS_MAX_AGE":   "72h",
		"HARNESSX_ARTIFACTS_MAX_BYTES": "10GiB",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := s3store.Config{Endpoint: "http://127.0.0.1:7070", Bucket: "team-bucket", Prefix: "agents/prod", Region: "eu-west-3",
		AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: secret,
		Retention: s3store.Retention{DeleteOnClose: true, MaxAge: 72 * time.Hour, MaxBytes: 10 << 30, ExpireOnClose: true}}
	if c != want {
		t.Fatalf("ConfigFromEnv =\n%+v\nwant\n%+v", c, want)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("store", "cfg", c)
	for name, out := range map[string]string{"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v of a pointer": fmt.Sprintf("%v", &c), "log": logs.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "AKIAIOSFODNN7EXAMPLE") {
			t.Errorf("%s shows a credential: %s", name, out)
		}
		if !strings.Contains(out, "s3://team-bucket/agents/prod") {
			t.Errorf("%s does not name the location: %s", name, out)
		}
	}

	// Defaults: AWS_DEFAULT_REGION and AWS_ENDPOINT_URL as fallbacks, keep.
	c, err = s3store.ConfigFromEnv(env(map[string]string{"HARNESSX_ARTIFACTS": "s3://b", "AWS_DEFAULT_REGION": "us-west-2", "AWS_ENDPOINT_URL": "https://minio.internal:9000"}))
	if err != nil || c.Region != "us-west-2" || c.Endpoint != "https://minio.internal:9000" || c.Prefix != "" || c.Retention != (s3store.Retention{}) {
		t.Fatalf("defaults: %+v, %v", c, err)
	}

	if _, err := s3store.ConfigFromEnv(env(nil)); !errors.Is(err, s3store.ErrNotConfigured) {
		t.Errorf("unset: %v", err)
	}
	for _, bad := range []map[string]string{
		{"HARNESSX_ARTIFACTS": "/tmp/artifacts"},
		{"HARNESSX_ARTIFACTS": "s3://user:" + secret + "@bucket/p"},
		{"HARNESSX_ARTIFACTS": "s3://bucket/a/../b"},
		{"HARNESSX_ARTIFACTS": "s3:///prefix"},
		{"HARNESSX_ARTIFACTS": "s3://b", "AWS_ACCESS_KEY_ID": "AKIA"},
		{"HARNESSX_ARTIFACTS": "s3://b", "HARNESSX_ARTIFACTS_ON_CLOSE": "sometimes"},
		{"HARNESSX_ARTIFACTS": "s3://b", "HARNESSX_ARTIFACTS_MAX_AGE": "3 days"},
		{"HARNESSX_ARTIFACTS": "s3://b", "HARNESSX_ARTIFACTS_MAX_BYTES": "-5"},
	} {
		_, err := s3store.ConfigFromEnv(env(bad))
		if err == nil {
			t.Errorf("%v: no error", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	if _, err := s3store.New(s3store.Config{Bucket: "b", Endpoint: "http://user:" + secret + "@127.0.0.1:1"}); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("endpoint with credentials: %v", err)
	}
}
