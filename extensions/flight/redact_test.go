package flight_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/redact"
)

// secrets are the values that must not survive redaction.
var secrets = []string{fakeSecret, "abcdef0123456789token", "hunter2", "AKIAABCDEFGHIJKLMNOP"}

// assertNoSecret checks every file under dir and every member of b.
func assertNoSecret(t *testing.T, dir string, b *flight.Bundle) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".tar.gz") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("%s contains %q", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		return
	}
	names := []string{flight.ManifestName}
	for _, m := range b.Members {
		names = append(names, m.Name)
	}
	for _, n := range names {
		data, _ := b.Member(n)
		for _, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("bundle member %s contains %q", n, s)
			}
		}
	}
}

func TestRedactor(t *testing.T) {
	red := flight.NewRedactor(nil)
	tests := []struct {
		name, in, want string
	}{
		{"anthropic key", "key is sk-ant-api03-EXAMPLE0000SECRET ok", "key is [REDACTED:anthropic-key] ok"},
		{"openai key", "use sk-proj-abcdefghijklmnop1234 now", "use [REDACTED:openai-key] now"},
		{"bearer", "Authorization: Bearer abc.def-ghi_123", "Authorization: Bearer [REDACTED:bearer-token]"},
		{"aws access key", "id AKIAABCDEFGHIJKLMNOP here", "id [REDACTED:aws-access-key] here"},
		{"aws secret key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
			"aws_secret_access_key = [REDACTED:aws-secret-key]\n"},
		{"env assignment", "DB_PASSWORD=hunter2 other=1", "DB_PASSWORD=[REDACTED:secret-assignment] other=1"},
		{"json field", `{"api_key": "abc123", "name": "x"}`, `{"api_key": "[REDACTED:secret-json-field]", "name": "x"}`},
		{"json token case", `{"AccessToken":"zzz"}`, `{"AccessToken":"[REDACTED:secret-json-field]"}`},
		{"counts stay", `max_tokens: 100, "input_tokens": 5`, `max_tokens: 100, "input_tokens": 5`},
		{"plain text", "the weather in Lisbon is fine", "the weather in Lisbon is fine"},
		{"url", "see https://example.com/a", "see https://example.com/a"},
		{"idempotent", "[REDACTED:anthropic-key] and TOKEN=[REDACTED:x]", "[REDACTED:anthropic-key] and TOKEN=[REDACTED:x]"},
		// Quoted and structured forms (issue 9).
		{"shell export quoted", `export DB_PASSWORD="hunter2 x"`, `export DB_PASSWORD="[REDACTED:secret-assignment]"`},
		{"toml single quoted", "api_key = 'abc123def'", "api_key = '[REDACTED:secret-assignment]'"},
		{"yaml quoted", `client_secret: "s3cr3t value"`, `client_secret: "[REDACTED:secret-assignment]"`},
		{"yaml plain", "  client_secret: s3cr3tvalue\n", "  client_secret: [REDACTED:secret-assignment]\n"},
		{"json in text", `args {"api_key": "abc def"} end`, `args {"api_key": "[REDACTED:secret-json-field]"} end`},
		{"escaped json in text", `{\"token\": \"abc def\"}`, `{\"token\": \"[REDACTED:secret-json-field]\"}`},
		{"escaped assignment", `PASSWORD=\"hunter2 x\"`, `PASSWORD=\"[REDACTED:secret-assignment]\"`},
		{"query string", "GET /v1?api_key=abc123&token=def456&page=2", "GET /v1?api_key=[REDACTED:secret-assignment]&token=[REDACTED:secret-assignment]&page=2"},
		{"api key header", "X-Api-Key: abcdef123", "X-Api-Key: [REDACTED:secret-assignment]"},
		{"basic auth header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:secret-assignment]"},
		{"pem block", "k:\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9\n-----END RSA PRIVATE KEY-----\ndone",
			"k:\n[REDACTED:private-key]\ndone"},
		{"pem block escaped", `"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n"`,
			`"[REDACTED:private-key]\n"`},
		{"postgres url", "dsn postgres://app:hunter2@db.internal:5432/x", "dsn postgres://app:[REDACTED:url-password]@db.internal:5432/x"},
		{"redis url no user", "redis://:hunter2@cache:6379", "redis://:[REDACTED:url-password]@cache:6379"},
		{"https url", "https://bob:p@ss@example.com/a", "https://bob:[REDACTED:url-password]@example.com/a"},
		{"url without password", "https://bob@example.com:8443/a", "https://bob@example.com:8443/a"},
		{"value after other marker", `password: "sk-ant-api03-EXAMPLE0000 hunter2"`, `password: "[REDACTED:secret-assignment]"`},
		{"json literals stay", `{"token": null, "api_key": true}`, `{"token": null, "api_key": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := red.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactorCustom(t *testing.T) {
	red := flight.NewRedactor(
		[]flight.Rule{{Name: "ticket", Pattern: regexp.MustCompile(`TICKET-\d+`)}},
		func(s string) string { return strings.ReplaceAll(s, "internal.corp", flight.Marker("host")) },
	)
	got := red.String("see TICKET-42 on internal.corp")
	if want := "see [REDACTED:ticket] on [REDACTED:host]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	counts := map[string]int{}
	redact.CountMarkers([]byte(got), counts)
	if counts["ticket"] != 1 || counts["host"] != 1 {
		t.Errorf("counts %v", counts)
	}
}

func TestRedactJSON(t *testing.T) {
	red := flight.NewRedactor(nil)
	out, err := red.JSON([]byte(`{"messages":[{"text":"Bearer abcdefghij"}],"secret":"s3","n":12345678901234567890,"nested":{"password":"p"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"text":"Bearer [REDACTED:bearer-token]"}],"n":12345678901234567890,"nested":{"password":"[REDACTED:secret-json-field]"},"secret":"[REDACTED:secret-json-field]"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// TestRedactionEverywhere runs an agent whose tool returns credentials and
// whose run fails, then checks that no secret reached the journal, the
// snapshots or any member of the bundles (automatic and exported).
func TestRedactionEverywhere(t *testing.T) {
	s := newAgent(t, []harnesstest.Response{
		harnesstest.CallTool("c1", "leak", map[string]string{"text": "token=" + fakeSecret}),
		harnesstest.Fail(errors.New("provider rejected key " + fakeSecret)),
	}, []*harness.Tool{leakTool()}, flight.WithIncludeArtifacts(true))
	res, _ := s.agent.Run(context.Background(), "my key is "+fakeSecret)
	if res.Status != harness.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	manual, err := s.rec.Trigger(context.Background(), "manual check")
	if err != nil {
		t.Fatal(err)
	}
	s.close(t)
	rec := filepath.Join(s.dir, "sess-1")
	exported := filepath.Join(t.TempDir(), "export.tar.gz")
	f, err := os.Create(exported)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flight.ExportJournal(context.Background(), rec, f, flight.ExportOptions{IncludeArtifacts: true}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bundles := append(s.rec.Incidents(), exported)
	if len(bundles) != 3 || bundles[1] != manual {
		t.Fatalf("bundles %v", bundles)
	}
	assertNoSecret(t, rec, nil)
	for _, p := range bundles {
		b, err := flight.ReadBundleFile(p, flight.ReadOptions{KeepArtifacts: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Verify(); err != nil {
			t.Error(err)
		}
		assertNoSecret(t, t.TempDir(), b)
		c := b.Manifest.Redaction.Counts
		if c[flight.RuleAnthropicKey] == 0 || c[flight.RuleBearer] == 0 || c[flight.RuleAWSAccessKey] == 0 || c[flight.RuleSecretJSON] == 0 {
			t.Errorf("%s: redaction counts %v", filepath.Base(p), c)
		}
		if len(b.Manifest.Redaction.Patterns) < 7 {
			t.Errorf("patterns %v", b.Manifest.Redaction.Patterns)
		}
	}
}
