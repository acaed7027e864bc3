package flight

import "github.com/harnessx/harnessx/internal/redact"

// Rule is a redaction pattern: every match of Pattern (or of its submatch
// Group, when Group > 0) is replaced by [Marker](Name). When NameGroup > 0
// it selects a submatch holding a variable or key name, and the match is
// redacted only when that name looks sensitive (see [SensitiveName]).
type Rule = redact.Rule

// The names of the built-in redaction rules, as they appear in markers and
// in a bundle manifest. The tracing extension applies the same rules.
const (
	RulePrivateKey   = redact.RulePrivateKey
	RuleAnthropicKey = redact.RuleAnthropicKey
	RuleOpenAIKey    = redact.RuleOpenAIKey
	RuleURLPassword  = redact.RuleURLPassword
	RuleBearer       = redact.RuleBearer
	RuleAWSAccessKey = redact.RuleAWSAccessKey
	RuleAWSSecretKey = redact.RuleAWSSecretKey
	RuleSecretJSON   = redact.RuleSecretJSON
	RuleSecretAssign = redact.RuleSecretAssign
	RuleJWT          = redact.RuleJWT
	RuleGitHubToken  = redact.RuleGitHubToken
	RuleGitLabToken  = redact.RuleGitLabToken
	RuleSlackToken   = redact.RuleSlackToken
	RuleSlackWebhook = redact.RuleSlackWebhook
	RuleGoogleAPIKey = redact.RuleGoogleAPIKey
	RuleStripeKey    = redact.RuleStripeKey
	RuleNPMToken     = redact.RuleNPMToken
	RuleCurlPassword = redact.RuleCurlPassword
)

// Marker returns the text that replaces a secret found by the rule named
// name: "[REDACTED:name]". A custom redactor (see [WithRedactor]) should
// use it too, so that bundles count its redactions.
func Marker(name string) string { return redact.Marker(name) }

// SensitiveName reports whether a variable or key name looks like it
// holds a secret: it contains "key", "token", "secret", "passw" (password,
// passwd), "passphrase" or "credential", or "auth" not followed by a
// letter (auth, basic_auth; not author), case-insensitively. Names of counters ("…tokens")
// and of the prompt-cache prefix key are not sensitive.
func SensitiveName(name string) bool { return redact.SensitiveName(name) }

// Redactor replaces secrets in text with markers. It applies the built-in
// rules, then the extra rules, then the custom functions. The zero value
// applies nothing; build one with [NewRedactor]. A Redactor is immutable
// and safe for concurrent use.
type Redactor struct {
	r redact.Redactor
}

// NewRedactor returns a redactor with the built-in rules followed by extra
// rules and custom functions. A custom function receives text and returns
// it with its secrets replaced, preferably by [Marker].
func NewRedactor(extra []Rule, funcs ...func(string) string) *Redactor {
	return &Redactor{r: *redact.New(extra, funcs...)}
}

// Patterns returns the names of the rules, in order, followed by
// "custom" when custom functions are set.
func (r *Redactor) Patterns() []string { return r.r.Patterns() }

// String returns s with its secrets replaced by markers. Text in which
// the built-in rules find no candidate word (sk-, bearer, akia, asia, aws,
// -----BEGIN, a URL with "user:password@", a token prefix such as ghp_,
// xox or AIza, -u, key, token, secret, passw, passphrase, auth,
// credential) is returned as is without allocating, unless extra rules or
// custom functions are set.
func (r *Redactor) String(s string) string { return r.r.String(s) }

// JSON redacts a JSON document structurally: every string value passes
// through [Redactor.String], and a non-empty string value under a
// sensitive key ([SensitiveName]) is replaced whole. Numbers keep their
// exact text; object keys come out sorted.
func (r *Redactor) JSON(data []byte) ([]byte, error) { return r.r.JSON(data) }
