package flight

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Rule is a redaction pattern: every match of Pattern (or of its submatch
// Group, when Group > 0) is replaced by [Marker](Name).
type Rule struct {
	// Name identifies the rule in markers and in the manifest's redaction
	// summary. Use letters, digits and dashes.
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

// The names of the built-in redaction rules, as they appear in markers and
// in a bundle manifest.
const (
	RuleAnthropicKey = "anthropic-key"
	RuleOpenAIKey    = "openai-key"
	RuleBearer       = "bearer-token"
	RuleAWSAccessKey = "aws-access-key"
	RuleAWSSecretKey = "aws-secret-key"
	RuleSecretJSON   = "secret-json-field"
	RuleSecretAssign = "secret-assignment"
)

// markerPrefix starts every redaction marker.
const markerPrefix = "[REDACTED:"

// Marker returns the text that replaces a secret found by the rule named
// name: "[REDACTED:name]". A custom redactor (see [WithRedactor]) should
// use it too, so that bundles count its redactions.
func Marker(name string) string { return markerPrefix + name + "]" }

// builtinRules returns the built-in rules, in the order they apply.
func builtinRules() []Rule {
	return []Rule{
		{Name: RuleAnthropicKey, Pattern: regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{6,}`)},
		{Name: RuleOpenAIKey, Pattern: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}`)},
		{Name: RuleBearer, Pattern: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{6,}=*)`), Group: 1},
		{Name: RuleAWSAccessKey, Pattern: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{Name: RuleAWSSecretKey, Pattern: regexp.MustCompile(`(?i)aws.{0,24}?(?:secret|private).{0,24}?["'\s:=]+([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`), Group: 1},
		{Name: RuleSecretJSON, Pattern: regexp.MustCompile(`"([^"\\]{0,64})"\s*:\s*"((?:[^"\\]|\\.)+)"`), Group: 2, NameGroup: 1},
		{Name: RuleSecretAssign, Pattern: regexp.MustCompile(`([A-Za-z0-9_.\-]{0,64})[ \t]*[=:][ \t]*([^\s"',;&\[\]{}]+)`), Group: 2, NameGroup: 1},
	}
}

// SensitiveName reports whether a variable or key name looks like it
// holds a secret: it contains "key", "token", "secret", "password" or
// "passwd", case-insensitively. Names of counters ("…tokens") and of the
// prompt-cache prefix key are not sensitive.
func SensitiveName(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "tokens") || strings.Contains(n, "prefix_key") || strings.Contains(n, "prefixkey") {
		return false
	}
	return strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") ||
		strings.Contains(n, "password") || strings.Contains(n, "passwd")
}

// Redactor replaces secrets in text with markers. It applies the built-in
// rules, then the extra rules, then the custom functions. A Redactor is
// immutable and safe for concurrent use.
type Redactor struct {
	rules  []Rule
	funcs  []func(string) string
	always bool // extra rules or funcs: no fast pre-check
}

// NewRedactor returns a redactor with the built-in rules followed by extra
// rules and custom functions. A custom function receives text and returns
// it with its secrets replaced, preferably by [Marker].
func NewRedactor(extra []Rule, funcs ...func(string) string) *Redactor {
	r := &Redactor{rules: builtinRules()}
	for _, x := range extra {
		if x.Pattern != nil && x.Name != "" {
			r.rules = append(r.rules, x)
			r.always = true
		}
	}
	for _, f := range funcs {
		if f != nil {
			r.funcs = append(r.funcs, f)
			r.always = true
		}
	}
	return r
}

// Patterns returns the names of the rules, in order, followed by
// "custom" when custom functions are set.
func (r *Redactor) Patterns() []string {
	names := make([]string, 0, len(r.rules)+1)
	for _, x := range r.rules {
		names = append(names, x.Name)
	}
	if len(r.funcs) > 0 {
		names = append(names, "custom")
	}
	return names
}

// String returns s with its secrets replaced by markers. Text without any
// candidate (no "sk-", "bearer", "akia", "aws", "key", "token", "secret",
// "passw") is returned as is without allocating, unless extra rules or
// custom functions are set.
func (r *Redactor) String(s string) string {
	if s == "" || (!r.always && !mayContainSecret(s)) {
		return s
	}
	for i := range r.rules {
		s = applyRule(&r.rules[i], s)
	}
	for _, f := range r.funcs {
		s = f(s)
	}
	return s
}

func applyRule(x *Rule, s string) string {
	locs := x.Pattern.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		g := x.Group
		if 2*g+1 >= len(loc) || loc[2*g] < 0 {
			continue
		}
		start, end := loc[2*g], loc[2*g+1]
		if start < last {
			continue
		}
		if x.NameGroup > 0 {
			ng := x.NameGroup
			if 2*ng+1 >= len(loc) || loc[2*ng] < 0 || !SensitiveName(s[loc[2*ng]:loc[2*ng+1]]) {
				continue
			}
		}
		val := s[start:end]
		if strings.HasPrefix(val, markerPrefix) || (x.NameGroup > 0 && allDigits(val)) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Marker(x.Name))
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return s != ""
}

// mayContainSecret is a cheap single pass that says whether any built-in
// rule could match s: it looks at pairs of bytes and checks a candidate
// word only where a pair starts one.
func mayContainSecret(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		switch uint16(s[i]|0x20)<<8 | uint16(s[i+1]|0x20) {
		case 'a'<<8 | 'k', 'a'<<8 | 's', 'a'<<8 | 'w', 's'<<8 | 'k', 's'<<8 | 'e',
			'b'<<8 | 'e', 'k'<<8 | 'e', 't'<<8 | 'o', 'p'<<8 | 'a':
			r := s[i:]
			if hasFold(r, "sk-") || hasFold(r, "secret") || hasFold(r, "bearer") || hasFold(r, "akia") ||
				hasFold(r, "asia") || hasFold(r, "aws") || hasFold(r, "key") || hasFold(r, "token") || hasFold(r, "passw") {
				return true
			}
		}
	}
	return false
}

// hasFold reports whether s starts with the lower-case ASCII prefix p,
// ignoring ASCII case.
func hasFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// JSON redacts a JSON document structurally: every string value passes
// through [Redactor.String], and a non-empty string value under a
// sensitive key ([SensitiveName]) is replaced whole. Numbers keep their
// exact text; object keys come out sorted.
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
		return r.field(key, x)
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

// field redacts the string value of a field named key.
func (r *Redactor) field(key, s string) string {
	if s != "" && key != "" && SensitiveName(key) && !strings.HasPrefix(s, markerPrefix) {
		return Marker(RuleSecretJSON)
	}
	return r.String(s)
}

// CountMarkers counts the redaction markers in data by rule name.
func CountMarkers(data []byte, into map[string]int) {
	p := []byte(markerPrefix)
	for {
		i := bytes.Index(data, p)
		if i < 0 {
			return
		}
		data = data[i+len(p):]
		j := bytes.IndexByte(data, ']')
		if j < 0 || j > 64 {
			continue
		}
		into[string(data[:j])]++
		data = data[j+1:]
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
