package redact_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/internal/redact"
)

func TestString(t *testing.T) {
	red := redact.Builtin()
	tests := []struct {
		name, in, want string
	}{
		// Provider keys, tokens, AWS.
		{"anthropic key", "key is sk-ant-api03-EXAMPLE0000SECRET ok", "key is [REDACTED:anthropic-key] ok"},
		{"openai key", "use sk-proj-abcdefghijklmnop1234 now", "use [REDACTED:openai-key] now"},
		{"bearer", "Authorization: Bearer abc.def-ghi_123", "Authorization: Bearer [REDACTED:bearer-token]"},
		{"aws access key", "id AKIAABCDEFGHIJKLMNOP here", "id [REDACTED:aws-access-key] here"},
		{"aws secret key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
			"aws_secret_access_key = [REDACTED:aws-secret-key]\n"},
		// Assignments in env files and shells.
		{"env", "DB_PASSWORD=hunter2 other=1", "DB_PASSWORD=[REDACTED:secret-assignment] other=1"},
		{"export double quoted", `export DB_PASSWORD="hunter 2"`, `export DB_PASSWORD="[REDACTED:secret-assignment]"`},
		{"export single quoted", `export GITHUB_TOKEN='ghp abc'`, `export GITHUB_TOKEN='[REDACTED:secret-assignment]'`},
		{"shell escaped space", `PASSWD=abc\ def`, `PASSWD=[REDACTED:secret-assignment]`},
		{"unterminated quote", `SECRET="abc123 rest`, `SECRET="[REDACTED:secret-assignment] rest`},
		// YAML, TOML, code.
		{"yaml", "db:\n  password: hunter2\n  user: app", "db:\n  password: [REDACTED:secret-assignment]\n  user: app"},
		{"yaml quoted", `client_secret: "s3cr3t value"`, `client_secret: "[REDACTED:secret-assignment]"`},
		{"toml", `api_key = "abc def"`, `api_key = "[REDACTED:secret-assignment]"`},
		{"toml single", "api_key = 'abc'", "api_key = '[REDACTED:secret-assignment]'"},
		{"ruby hash", `"api_key" => "abc"`, `"api_key" => "[REDACTED:secret-assignment]"`},
		{"go", `token := "abc"`, `token := "[REDACTED:secret-assignment]"`},
		{"long name", "MY_VERY_LONG_SERVICE_ACCOUNT_PRIVATE_KEY_FOR_PRODUCTION=abc", "MY_VERY_LONG_SERVICE_ACCOUNT_PRIVATE_KEY_FOR_PRODUCTION=[REDACTED:secret-assignment]"},
		// JSON, plain and escaped inside a JSON string.
		{"json", `{"api_key": "abc", "name": "x"}`, `{"api_key": "[REDACTED:secret-json-field]", "name": "x"}`},
		{"json case", `{"AccessToken":"zzz"}`, `{"AccessToken":"[REDACTED:secret-json-field]"}`},
		{"json name with spaces", `{"my api key": "abc"}`, `{"my api key": "[REDACTED:secret-json-field]"}`},
		{"json escaped", `"{\"token\": \"abc def\", \"n\": 1}"`, `"{\"token\": \"[REDACTED:secret-json-field]\", \"n\": 1}"`},
		{"json escaped backslash", `{\"token\":\"a\\\\b\"}`, `{\"token\":\"[REDACTED:secret-json-field]\"}`},
		{"assignment in json string", `{"content":"export DB_PASSWORD=\"hunter2\"\nnext"}`, `{"content":"export DB_PASSWORD=\"[REDACTED:secret-assignment]\"\nnext"}`},
		{"unquoted in json string", `{"content":"TOKEN=abc\nnext"}`, `{"content":"TOKEN=[REDACTED:secret-assignment]\nnext"}`},
		// Query strings and headers.
		{"query", "GET /v1?api_key=abc123&token=def456&page=2", "GET /v1?api_key=[REDACTED:secret-assignment]&token=[REDACTED:secret-assignment]&page=2"},
		{"x-api-key", "X-Api-Key: abcdef123", "X-Api-Key: [REDACTED:secret-assignment]"},
		{"basic", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:secret-assignment]"},
		{"proxy auth", "Proxy-Authorization: dXNlcjpwYXNz", "Proxy-Authorization: [REDACTED:secret-assignment]"},
		// Private keys.
		{"pem", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34\nGkxFhD9==\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED:private-key]\nb"},
		{"pem pkcs8", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "[REDACTED:private-key]"},
		{"pem pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQdG\n-----END PGP PRIVATE KEY BLOCK-----", "[REDACTED:private-key]"},
		{"pem escaped", `"x\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\n-----END EC PRIVATE KEY-----\n"`, `"x\n[REDACTED:private-key]\n"`},
		{"pem unterminated", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\nNzaC1r\n...", "[REDACTED:private-key]..."},
		{"public key stays", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"},
		// URLs and connection strings.
		{"postgres", "dsn postgres://app:hunter2@db.internal:5432/x?sslmode=off", "dsn postgres://app:[REDACTED:url-password]@db.internal:5432/x?sslmode=off"},
		{"mysql", "mysql://root:pw@tcp(127.0.0.1:3306)/db", "mysql://root:[REDACTED:url-password]@tcp(127.0.0.1:3306)/db"},
		{"redis no user", "redis://:hunter2@cache:6379/0", "redis://:[REDACTED:url-password]@cache:6379/0"},
		{"https at in password", "https://bob:p@ss@example.com/a", "https://bob:[REDACTED:url-password]@example.com/a"},
		{"url in assignment", "DATABASE_URL=postgres://u:pw@h/db", "DATABASE_URL=postgres://u:[REDACTED:url-password]@h/db"},
		{"password assigned a url", "password=postgres://u:pw@h/db", "password=[REDACTED:secret-assignment]"},
		// What stays.
		{"url no password", "https://bob@example.com:8443/a", "https://bob@example.com:8443/a"},
		{"url port", "see https://example.com:8080/a", "see https://example.com:8080/a"},
		{"counters", `max_tokens: 100, "input_tokens": 5`, `max_tokens: 100, "input_tokens": 5`},
		{"literals", `{"token": null, "api_key": true, "key": 12}`, `{"token": null, "api_key": true, "key": 12}`},
		{"schema", `{"api_key":{"type":"string"}}`, `{"api_key":{"type":"string"}}`},
		{"prefix key", "prefix_key=abc", "prefix_key=abc"},
		{"plain", "the weather in Lisbon is fine", "the weather in Lisbon is fine"},
		{"prose", "the keyboard and the token ring", "the keyboard and the token ring"},
		{"markers stay", "[REDACTED:anthropic-key] and TOKEN=[REDACTED:x] and \"key\": \"[REDACTED:y]\"",
			"[REDACTED:anthropic-key] and TOKEN=[REDACTED:x] and \"key\": \"[REDACTED:y]\""},
		{"value around a marker", `password: "sk-ant-api03-EXAMPLE0000 hunter2"`, `password: "[REDACTED:secret-assignment]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := red.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := red.String(got); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

// Fake tokens of the formats the token rules know, made of repeated
// characters so that no real token is in the source.
var (
	alnum36 = strings.Repeat("aB3", 12) // 36 letters and digits
	jwt     = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
)

func same(s string) [2]string { return [2]string{s, s} }

// tokenCorpus holds, for each format of the token rules, a positive (a
// token the rule replaces) and a near miss (text that looks like one and
// stays): input and expected output.
var tokenCorpus = []struct {
	name  string
	inOut [2]string
}{
	{"jwt", [2]string{"got " + jwt + " back", "got [REDACTED:jwt] back"}},
	{"jwt in json", [2]string{`{"id_jwt":"` + jwt + `"}`, `{"id_jwt":"[REDACTED:jwt]"}`}},
	{"jwt unsigned", [2]string{"x eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0. y", "x [REDACTED:jwt] y"}},
	{"jwt near miss: payload not json", same("x eyJhbGciOiJIUzI1NiJ9.bm90LWpzb24.c2ln y")},
	{"jwt near miss: one segment", same("x eyJhbGciOiJIUzI1NiJ9 y")},

	{"github ghp", [2]string{"use ghp_" + alnum36 + " now", "use [REDACTED:github-token] now"}},
	{"github gho", [2]string{"gho_" + alnum36, "[REDACTED:github-token]"}},
	{"github ghs", [2]string{"(ghs_" + alnum36 + ")", "([REDACTED:github-token])"}},
	{"github ghu ghr", [2]string{"ghu_" + alnum36 + " ghr_" + alnum36, "[REDACTED:github-token] [REDACTED:github-token]"}},
	{"github fine-grained", [2]string{"github_pat_11ABCDEFG0aBcDeFgHiJkLm_" + alnum36 + "x", "[REDACTED:github-token]"}},
	{"github near miss: short", same("ghp_" + alnum36[:20])},
	{"github near miss: other letter", same("ghx_" + alnum36)},
	{"github near miss: pat short", same("github_pat_abc")},

	{"gitlab", [2]string{"glpat-aB3dE5fG7hI9jK1lM3nO", "[REDACTED:gitlab-token]"}},
	{"gitlab routable", [2]string{"glpat-aB3dE5fG7hI9jK1lM3nO.01.120abcdef.", "[REDACTED:gitlab-token]."}},
	{"gitlab near miss", same("glpat-short123")},

	{"slack bot", [2]string{"xoxb-1234567890-1234567890123-" + alnum36[:24], "[REDACTED:slack-token]"}},
	{"slack user", [2]string{"t=xoxp-12345-67890-abcdefgh", "t=[REDACTED:slack-token]"}},
	{"slack app", [2]string{"xoxa-2-abcdefghij", "[REDACTED:slack-token]"}},
	{"slack refresh", [2]string{"xoxe.xoxr-1-" + alnum36, "xoxe.[REDACTED:slack-token]"}},
	{"slack near miss: hugs", same("xoxo-hugs-and-kisses-123")},
	{"slack near miss: no digits", same("xoxb-notatoken-atall")},

	{"slack webhook", [2]string{"POST https://hooks.slack.com/services/T00000000/B00000000/" + alnum36[:24] + " ok",
		"POST https://hooks.slack.com/services/[REDACTED:slack-webhook] ok"}},
	{"slack workflow webhook", [2]string{"hooks.slack.com/workflows/T0AAAA/A0BBBB/1234/abcd", "hooks.slack.com/workflows/[REDACTED:slack-webhook]"}},
	{"slack webhook near miss: no path", same("see https://hooks.slack.com/services/ for docs")},
	{"slack webhook near miss: other host", same("https://api.slack.com/services/T0/B0/x")},

	{"google", [2]string{"key AIzaSy" + alnum36[:33] + " ok", "key [REDACTED:google-api-key] ok"}},
	{"google near miss: short", same("AIzaSy" + alnum36[:20])},
	{"google near miss: case", same("aiza" + alnum36)},

	{"stripe secret live", [2]string{"sk_live_" + alnum36[:24], "[REDACTED:stripe-key]"}},
	{"stripe restricted live", [2]string{"rk_live_" + alnum36[:24], "[REDACTED:stripe-key]"}},
	{"stripe secret test", [2]string{"x=sk_test_" + alnum36, "x=[REDACTED:stripe-key]"}},
	{"stripe near miss: publishable", same("pk_live_" + alnum36[:24])},
	{"stripe near miss: short", same("sk_live_abc")},

	{"npm", [2]string{"//registry.npmjs.org/:_authToken=npm_" + alnum36, "//registry.npmjs.org/:_authToken=[REDACTED:npm-token]"}},
	{"npm plain", [2]string{"token npm_" + alnum36 + ".", "token [REDACTED:npm-token]."}},
	{"npm near miss", same("npm_install_" + alnum36[:10])},

	{"curl -u", [2]string{"curl -u alice:s3cr3t https://api.example.com", "curl -u alice:[REDACTED:curl-password] https://api.example.com"}},
	{"curl --user quoted", [2]string{"curl -s --user 'bob:pa ss' https://h", "curl -s --user 'bob:[REDACTED:curl-password]' https://h"}},
	{"curl -u double quoted", [2]string{`curl -u "bob:p@ss" h`, `curl -u "bob:[REDACTED:curl-password]" h`}},
	{"curl -u escaped", [2]string{`{"cmd":"curl -u \"bob:p w\" h"}`, `{"cmd":"curl -u \"bob:[REDACTED:curl-password]\" h"}`}},
	{"curl -u joined", [2]string{"curl -ualice:pw h", "curl -ualice:[REDACTED:curl-password] h"}},
	{"curl continued", [2]string{"curl -sS \\\n  -u alice:pw:x \\\n  https://h", "curl -sS \\\n  -u alice:[REDACTED:curl-password] \\\n  https://h"}},
	{"curl near miss: no password", same("curl -u alice https://h")},
	{"curl near miss: not curl", same("docker run -u 1000:1000 img")},
	{"curl near miss: user agent", same("curl --user-agent a:b https://h")},

	{"json passphrase", [2]string{`{"passphrase": "correct horse"}`, `{"passphrase": "[REDACTED:secret-json-field]"}`}},
	{"json credentials", [2]string{`{"credentials":"u:p"}`, `{"credentials":"[REDACTED:secret-json-field]"}`}},
	{"json auth", [2]string{`{"auth": "dXNlcjpwYXNz", "n": 1}`, `{"auth": "[REDACTED:secret-json-field]", "n": 1}`}},
	{"json basic_auth escaped", [2]string{`"{\"basic_auth\": \"u:p\"}"`, `"{\"basic_auth\": \"[REDACTED:secret-json-field]\"}"`}},
	{"json near miss: author", same(`{"author": "Jane", "authority": "x", "phrase": "y", "credit": "z"}`)},
	{"json near miss: auth object", same(`{"auth": {"type": "basic"}}`)},
}

// TestTokenFormats is the corpus of the token rules: each format has a
// positive (a token the rule replaces) and a near miss (text that looks
// like one and stays). The fuzz seed corpus (testdata/fuzz/FuzzRedact)
// holds the same lines, so that they are checked against the reference.
func TestTokenFormats(t *testing.T) {
	red := redact.Builtin()
	tests := tokenCorpus
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, want := tt.inOut[0], tt.inOut[1]
			got := red.String(in)
			if got != want {
				t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
			}
			if again := red.String(got); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
			if in != want && !redact.MayContainSecret(in) {
				t.Errorf("MayContainSecret(%q) = false", in)
			}
		})
	}
}

func TestZeroRedactor(t *testing.T) {
	var r redact.Redactor
	if got := r.String("TOKEN=abc"); got != "TOKEN=abc" {
		t.Errorf("zero redactor changed %q", got)
	}
	if p := r.Patterns(); len(p) != 0 {
		t.Errorf("patterns %v", p)
	}
}

func TestCustom(t *testing.T) {
	red := redact.New(
		[]redact.Rule{
			{Name: "ticket", Pattern: regexp.MustCompile(`TICKET-\d+`)},
			{}, // ignored
			{Name: "pin", Pattern: regexp.MustCompile(`(\w+)#(\w+)`), Group: 2, NameGroup: 1},
		},
		func(s string) string { return strings.ReplaceAll(s, "internal.corp", redact.Marker("host")) },
		nil,
	)
	got := red.String("see TICKET-42 on internal.corp, secret#xyz, other#xyz, key#123")
	if want := "see [REDACTED:ticket] on [REDACTED:host], secret#[REDACTED:pin], other#xyz, key#123"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	counts := map[string]int{}
	redact.CountMarkers([]byte(got), counts)
	if counts["ticket"] != 1 || counts["host"] != 1 || counts["pin"] != 1 || len(counts) != 3 {
		t.Errorf("counts %v", counts)
	}
	want := []string{"private-key", "anthropic-key", "openai-key", "jwt", "github-token", "gitlab-token", "slack-token",
		"slack-webhook", "google-api-key", "stripe-key", "npm-token", "url-password", "curl-password", "bearer-token",
		"aws-access-key", "aws-secret-key", "secret-json-field", "secret-assignment", "ticket", "pin", "custom"}
	if p := red.Patterns(); strings.Join(p, ",") != strings.Join(want, ",") {
		t.Errorf("patterns %v", p)
	}
}

func TestJSON(t *testing.T) {
	red := redact.Builtin()
	out, err := red.JSON([]byte(`{"messages":[{"text":"Bearer abcdefghij"}],"secret":"s3","n":12345678901234567890,"nested":{"password":"p"},"cfg":"export API_KEY=\"a b\""}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cfg":"export API_KEY=\"[REDACTED:secret-assignment]\"","messages":[{"text":"Bearer [REDACTED:bearer-token]"}],"n":12345678901234567890,"nested":{"password":"[REDACTED:secret-json-field]"},"secret":"[REDACTED:secret-json-field]"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := red.JSON([]byte(`{`)); err == nil {
		t.Error("no error for invalid JSON")
	}
}

func TestIsMarker(t *testing.T) {
	for s, want := range map[string]bool{
		"[REDACTED:x]": true, "[REDACTED:secret-json-field]": true, "[REDACTED:]": false, "[REDACTED:a b]": false,
		"[REDACTED:x] y": false, "x[REDACTED:x]": false, "[REDACTED:" + strings.Repeat("a", 65) + "]": false,
	} {
		if got := redact.IsMarker(s); got != want {
			t.Errorf("IsMarker(%q) = %v", s, got)
		}
	}
}

func TestSensitiveName(t *testing.T) {
	for n, want := range map[string]bool{
		"api_key": true, "GITHUB_TOKEN": true, "client_secret": true, "DB_PASSWORD": true, "passwd": true,
		"max_tokens": false, "prefix_key": false, "name": false, "authorization": false,
		"passphrase": true, "GPG_PASSPHRASE": true, "credentials": true, "aws_credential": true, "auth": true,
		"basic_auth": true, "X-Auth-User": true, "oauth2": true, "AUTH": true,
		"author": false, "authority": false, "Authentication": false, "phrase": false, "credit": false,
	} {
		if got := redact.SensitiveName(n); got != want {
			t.Errorf("SensitiveName(%q) = %v", n, got)
		}
	}
}

// TestFastPathAllocs checks that text without candidate words costs no
// allocation.
func TestFastPathAllocs(t *testing.T) {
	red := redact.Builtin()
	s := strings.Repeat(`[{"role":"user","parts":[{"type":"text","content":"What is the weather in Paris today?"}]}]`, 20)
	if redact.MayContainSecret(s) || redact.MayContainSecret([]byte(s)) {
		t.Fatal("candidate found in plain text")
	}
	if n := testing.AllocsPerRun(100, func() { _ = red.String(s) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func BenchmarkStringPlain(b *testing.B) {
	red := redact.Builtin()
	s := strings.Repeat(`[{"role":"user","parts":[{"type":"text","content":"What is the weather in Paris today?"}]}]`, 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = red.String(s)
	}
}

// prose is English text with none of the candidate words, but with the
// bytes that start some (s, b, a, k, t, p, g, x, ':', '.', '-').
const prose = "The long-range forecast for Lisbon: bright skies through Thursday, with a light breeze off the Atlantic. " +
	"Expect highs of 24 degrees, lows near 15, and a chance of fog at dawn along the coast. Next week brings mixed weather: " +
	"grey mornings, sunny afternoons and an occasional shower inland. Travellers should pack a jacket for the evenings. "

func BenchmarkStringProse(b *testing.B) {
	red := redact.Builtin()
	s := strings.Repeat(prose, 6)
	if redact.MayContainSecret(s) {
		b.Fatal("candidate found in prose")
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = red.String(s)
	}
}

func BenchmarkStringSecrets(b *testing.B) {
	red := redact.Builtin()
	s := strings.Repeat(`{"content":"export DB_PASSWORD=\"hunter2\" and the monkey key: value https://u:p@h/x"} `, 20)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = red.String(s)
	}
}

// BenchmarkStringCandidateNames: JSON whose member names hold candidate
// words ("token", "key", "auth") but whose values are numbers, objects or
// names that are not sensitive ("input_tokens"): LangSmith's usage
// metadata, tool schemas. The anchored patterns run only for a sensitive
// name with a value they can match.
func BenchmarkStringCandidateNames(b *testing.B) {
	red := redact.Builtin()
	s := strings.Repeat(`{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_token_details":{"cache_read":0},`+
		`"max_tokens":{"type":"integer"},"keys":["a","b"],"auth":{"type":"object"},"token_count":3} `, 10)
	if got := red.String(s); got != s {
		b.Fatalf("redacted: %s", got)
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_ = red.String(s)
	}
}

func TestMayContainSecretInJSON(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"sunny in Paris", false},
		{`say "hi" \ bye`, false},                   // escapes that start no candidate word
		{"line\nnext\r\f\x00\x1f\u2028\xff", false}, // the same
		{"\token=abc", true},                        // "\token" once encoded
		{"\bearer xyz", true},                       // "\bearer"
		{"\x1aws", true},                            // "\u001aws"
		{"\vbearer", true},                          // "\u000bearer"
		{"\x1credentials", true},                    // "\u001credentials"
		{"x\npm_" + alnum36, true},                  // "\npm_…"
		{"x\rk_live_" + alnum36, true},              // "\rk_live_…"
		{"x\npx_\rk_other", false},
		{"my token", true},
		{"https://u:p@host", true},
	} {
		if got := redact.MayContainSecretInJSON(tc.s); got != tc.want {
			t.Errorf("MayContainSecretInJSON(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
