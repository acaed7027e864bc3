package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Rule is a redaction pattern: every match of Pattern (or of its submatch
// Group, when Group > 0) is replaced by [Marker](Name).
type Rule struct {
	// Name identifies the rule in markers and in a bundle manifest's
	// redaction summary. Use letters, digits and dashes.
	Name string
	// Pattern finds the secrets.
	Pattern *regexp.Regexp
	// Group selects the submatch to replace; 0 replaces the whole match.
	Group int
	// NameGroup, when > 0, selects a submatch holding a variable or key
	// name: the match is redacted only when that name looks sensitive
	// (see [SensitiveName]).
	NameGroup int
}

// The names of the built-in rules, as they appear in markers and in a
// bundle manifest.
const (
	RulePrivateKey   = "private-key"
	RuleAnthropicKey = "anthropic-key"
	RuleOpenAIKey    = "openai-key"
	RuleURLPassword  = "url-password"
	RuleBearer       = "bearer-token"
	RuleAWSAccessKey = "aws-access-key"
	RuleAWSSecretKey = "aws-secret-key"
	RuleJWT          = "jwt"
	RuleGitHubToken  = "github-token"
	RuleGitLabToken  = "gitlab-token"
	RuleSlackToken   = "slack-token"
	RuleSlackWebhook = "slack-webhook"
	RuleGoogleAPIKey = "google-api-key"
	RuleStripeKey    = "stripe-key"
	RuleNPMToken     = "npm-token"
	RuleCurlPassword = "curl-password"
	RuleSecretJSON   = "secret-json-field"
	RuleSecretAssign = "secret-assignment"
)

// MarkerPrefix starts every redaction marker.
const MarkerPrefix = "[REDACTED:"

// maxMarkerName bounds the rule name inside a marker.
const maxMarkerName = 64

// Marker returns the text that replaces a secret found by the rule named
// name: "[REDACTED:name]".
func Marker(name string) string { return MarkerPrefix + name + "]" }

// IsMarker reports whether s is exactly one marker whose rule name is made
// of letters, digits, '_', '.' and '-'.
func IsMarker(s string) bool {
	if len(s) < len(MarkerPrefix)+2 || !strings.HasPrefix(s, MarkerPrefix) || s[len(s)-1] != ']' {
		return false
	}
	name := s[len(MarkerPrefix) : len(s)-1]
	if len(name) > maxMarkerName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameChar(name[i]) {
			return false
		}
	}
	return true
}

// SensitiveName reports whether a variable or key name looks like it holds
// a secret: it contains "key", "token", "secret", "passw" (password,
// passwd), "passphrase" or "credential", or "auth" not followed by a
// letter (auth, basic_auth, X-Auth-User, oauth2, but not author or
// authority), case-insensitively. Names of counters ("…tokens") and of
// the prompt-cache prefix key are not sensitive.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "tokens") || strings.Contains(n, "prefix_key") || strings.Contains(n, "prefixkey") {
		return false
	}
	return strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") ||
		strings.Contains(n, "passw") || strings.Contains(n, "passphrase") || strings.Contains(n, "credential") ||
		authWord(n)
}

// authWord reports whether the lower-case name n holds "auth" not
// followed by a letter.
func authWord(n string) bool {
	for i := 0; ; {
		j := strings.Index(n[i:], "auth")
		if j < 0 {
			return false
		}
		i += j + len("auth")
		if i == len(n) || n[i] < 'a' || n[i] > 'z' {
			return true
		}
	}
}

// sensitiveAssigned reports whether a name in an assignment or a header in
// text looks sensitive: [SensitiveName], or an Authorization header.
func sensitiveAssigned(name string) bool {
	return SensitiveName(name) || strings.Contains(strings.ToLower(name), "authorization")
}

// Redactor replaces secrets in text with markers. It applies the built-in
// rules, then the extra rules, then the custom functions. The zero value
// applies nothing; [New] and [Builtin] return redactors with the built-in
// rules. A Redactor is immutable and safe for concurrent use.
type Redactor struct {
	builtin bool
	rules   []rule
	funcs   []func(string) string
}

// New returns a redactor with the built-in rules followed by the extra
// rules and custom functions; rules without a name or pattern and nil
// functions are ignored. A custom function receives text and returns it
// with its secrets replaced, preferably by [Marker].
func New(extra []Rule, funcs ...func(string) string) *Redactor {
	r := &Redactor{builtin: true}
	for _, x := range extra {
		if x.Pattern != nil && x.Name != "" {
			r.rules = append(r.rules, rule{name: x.Name, re: x.Pattern, groups: []int{x.Group}, nameGroup: x.NameGroup, digitsStay: x.NameGroup > 0})
		}
	}
	for _, f := range funcs {
		if f != nil {
			r.funcs = append(r.funcs, f)
		}
	}
	return r
}

// Builtin returns a redactor with the built-in rules only.
func Builtin() *Redactor { return &Redactor{builtin: true} }

// Deterministic reports whether String's result depends on its argument
// alone, so that a caller may reuse it for an equal string: true unless
// custom functions are set (rules are).
func (r *Redactor) Deterministic() bool { return len(r.funcs) == 0 }

// Patterns returns the names of the rules, in order, followed by "custom"
// when custom functions are set.
func (r *Redactor) Patterns() []string {
	var names []string
	if r.builtin {
		names = append(names, RulePrivateKey, RuleAnthropicKey, RuleOpenAIKey, RuleJWT, RuleGitHubToken,
			RuleGitLabToken, RuleSlackToken, RuleSlackWebhook, RuleGoogleAPIKey, RuleStripeKey, RuleNPMToken,
			RuleURLPassword, RuleCurlPassword, RuleBearer, RuleAWSAccessKey, RuleAWSSecretKey, RuleSecretJSON,
			RuleSecretAssign)
	}
	for _, x := range r.rules {
		names = append(names, x.name)
	}
	if len(r.funcs) > 0 {
		names = append(names, "custom")
	}
	return names
}

// String returns s with its secrets replaced by markers. Text in which the
// built-in rules find no candidate word is returned as is without
// allocating, unless extra rules or custom functions are set.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r.builtin {
		s = redactBuiltin(s)
	}
	for i := range r.rules {
		s = r.rules[i].apply(s)
	}
	for _, f := range r.funcs {
		s = f(s)
	}
	return s
}

// Field redacts the string value of a member or attribute named key: a
// non-empty value under a sensitive key ([SensitiveName]) is replaced whole
// by the secret-json-field marker; any other passes through
// [Redactor.String].
func (r *Redactor) Field(key, s string) string {
	if s != "" && key != "" && r.builtin && SensitiveName(key) && !IsMarker(s) {
		return Marker(RuleSecretJSON)
	}
	return r.String(s)
}

// JSON redacts a JSON document structurally: every string value passes
// through [Redactor.Field] with its member name. Numbers keep their exact
// text; object keys come out sorted.
func (r *Redactor) JSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v = r.value("", v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (r *Redactor) value(key string, v any) any {
	switch x := v.(type) {
	case string:
		return r.Field(key, x)
	case map[string]any:
		for k, e := range x {
			x[k] = r.value(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.value(key, e)
		}
		return x
	}
	return v
}

// CountMarkers adds the redaction markers in data to into, by rule name.
func CountMarkers(data []byte, into map[string]int) {
	p := []byte(MarkerPrefix)
	for {
		i := bytes.Index(data, p)
		if i < 0 {
			return
		}
		data = data[i+len(p):]
		j := bytes.IndexByte(data, ']')
		if j < 0 || j > maxMarkerName {
			continue
		}
		into[string(data[:j])]++
		data = data[j+1:]
	}
}

// ---- rules ----

// rule is a compiled rule: the first of groups that took part in a match
// is the value replaced.
type rule struct {
	name       string
	re         *regexp.Regexp
	groups     []int
	nameGroup  int
	digitsStay bool // values of digits, '.' and '-' stay
}

// apply replaces the values of every match of x in s.
func (x *rule) apply(s string) string {
	locs := x.re.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		start, end, ok := x.value(s, loc)
		if !ok || start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Marker(x.name))
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// value returns the bounds of the value to replace in the match loc of s,
// or false when the match is to be left alone.
func (x *rule) value(s string, loc []int) (start, end int, ok bool) {
	g := -1
	for _, k := range x.groups {
		if 2*k+1 < len(loc) && loc[2*k] >= 0 {
			g = k
			break
		}
	}
	if g < 0 {
		return 0, 0, false
	}
	start, end = loc[2*g], loc[2*g+1]
	if x.nameGroup > 0 {
		ng := x.nameGroup
		if 2*ng+1 >= len(loc) || loc[2*ng] < 0 || !SensitiveName(s[loc[2*ng]:loc[2*ng+1]]) {
			return 0, 0, false
		}
	}
	v := s[start:end]
	if v == "" || IsMarker(v) || (x.digitsStay && allDigits(v)) {
		return 0, 0, false
	}
	return start, end, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return s != ""
}

// plainValue reports whether an unquoted assigned value is one that never
// is a secret: a number or a JSON or YAML literal. Leaving them keeps JSON
// valid.
func plainValue(v string) bool {
	if allDigits(v) {
		return true
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "nil", "none":
		return true
	}
	return false
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '.' || c == '-'
}
