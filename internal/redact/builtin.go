package redact

import (
	"regexp"
	"strings"
)

// Value grammars shared by the member and assignment rules.
const (
	// reMarker is one marker.
	reMarker = `\[REDACTED:[A-Za-z0-9_.\-]{1,64}\]`
	// reEscQuoted is a value in escaped double quotes, as in JSON text
	// inside a JSON string: \"…\".
	reEscQuoted = `\\"((?:[^"\\]|\\[^"])+)\\"`
	// reDQuoted is a value in double quotes, with backslash escapes, on
	// one line.
	reDQuoted = `"((?:[^"\\\r\n]|\\.)+)"`
	// reSQuoted is a value in single quotes, on one line.
	reSQuoted = `'([^'\r\n]+)'`
	// reUnquoted is a bare value: it ends at white space, a quote, a
	// separator of lists or query strings, a bracket, or an escaped line
	// break or quote (JSON text); markers may be part of it.
	reUnquoted = `((?:` + reMarker + `|[^\s"'\\,;&\[\]{}]|\\[^nrt"'])+)`
	// reScheme is an HTTP authorization scheme before a credential.
	reScheme = `(?i:basic|bearer|token|digest|negotiate)[ \t]+`
)

// Patterns of the built-in rules. They are compiled once and never
// change; a Redactor only reads them.
var (
	rePrivateKey = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nrt])*)`)
	reAnthropic  = regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{6,}`)
	reOpenAI     = regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}`)
	reBearer     = regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{6,}=*)`)
	reAWSAccess  = regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)
	reAWSSecret  = regexp.MustCompile(`(?i)aws.{0,24}?(?:secret|private).{0,24}?["'\s:=]+([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)

	// Tokens known by their prefix. Each pattern starts with a literal,
	// which the regexp package finds with a substring search.
	reJWT          = regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*`)
	reGitHub       = regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36,}`)
	reGitHubPAT    = regexp.MustCompile(`github_pat_[A-Za-z0-9_]{22,}`)
	reGitLab       = regexp.MustCompile(`glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*`)
	reSlack        = regexp.MustCompile(`xox[abceprs]-[0-9]+-[A-Za-z0-9\-]{8,}`)
	reSlackWebhook = regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_\-]+/[A-Za-z0-9_/\-]+)`)
	reGoogle       = regexp.MustCompile(`AIza[A-Za-z0-9_\-]{35,}`)
	reStripeSK     = regexp.MustCompile(`sk_(?:live|test)_[A-Za-z0-9]{16,}`)
	reStripeRK     = regexp.MustCompile(`rk_(?:live|test)_[A-Za-z0-9]{16,}`)
	reNPM          = regexp.MustCompile(`npm_[A-Za-z0-9]{36,}`)
	// reCurl: the password of curl -u user:password or --user, on the
	// command's line (or its continuation lines after a backslash),
	// single-, double- (maybe escaped) or not quoted; group 1, 2 or 3.
	reCurl = regexp.MustCompile(`curl(?:[^\r\n]|\\\r?\n)*?[ \t](?:-u[ \t]*|--user(?:[ \t]+|=))` +
		`(?:'[^'\s:]*:([^'\r\n]+)'|\\?"[^"\\\s:]*:((?:[^"\\\r\n]|\\[^"])+)\\?"|[^\s:"'\\]*:((?:[^\s"'\\]|\\[^nrt"'])+))`)

	// The anchored patterns are matched where a candidate word is found.
	// reURL: group 1 is the password.
	reURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@"'\\<>\[\]]*:([^\s/"'\\<>]+)@`)
	// reMember: group 1 is the member name, 2 or 3 the value.
	reMember = regexp.MustCompile(`^\\?"([^"\\\r\n]{1,64})\\?"[ \t\r\n]*:[ \t\r\n]*(?:` + reEscQuoted + `|` + reDQuoted + `)`)
	// reAssign: group 1 is the name, 2 to 5 the value (5 unquoted).
	reAssign = regexp.MustCompile(`^(?:\\?["'])?([A-Za-z0-9_.\-]{1,64})(?:\\?["'])?[ \t]*(?:=>|:=|=|:)[ \t]*(?:` +
		reEscQuoted + `|` + reDQuoted + `|` + reSQuoted + `|(?:` + reScheme + `)?(?:\\?["'])?` + reUnquoted + `)`)
)

// The built-in rules matched with FindAll, in order.
var (
	rulePrivateKey = rule{name: RulePrivateKey, re: rePrivateKey, groups: []int{0}}
	ruleAnthropic  = rule{name: RuleAnthropicKey, re: reAnthropic, groups: []int{0}}
	ruleOpenAI     = rule{name: RuleOpenAIKey, re: reOpenAI, groups: []int{0}}
	ruleBearer     = rule{name: RuleBearer, re: reBearer, groups: []int{1}}
	ruleAWSAccess  = rule{name: RuleAWSAccessKey, re: reAWSAccess, groups: []int{0}}
	ruleAWSSecret  = rule{name: RuleAWSSecretKey, re: reAWSSecret, groups: []int{1}}

	ruleJWT          = rule{name: RuleJWT, re: reJWT, groups: []int{0}}
	ruleGitHub       = rule{name: RuleGitHubToken, re: reGitHub, groups: []int{0}}
	ruleGitHubPAT    = rule{name: RuleGitHubToken, re: reGitHubPAT, groups: []int{0}}
	ruleGitLab       = rule{name: RuleGitLabToken, re: reGitLab, groups: []int{0}}
	ruleSlack        = rule{name: RuleSlackToken, re: reSlack, groups: []int{0}}
	ruleSlackWebhook = rule{name: RuleSlackWebhook, re: reSlackWebhook, groups: []int{1}}
	ruleGoogle       = rule{name: RuleGoogleAPIKey, re: reGoogle, groups: []int{0}}
	ruleStripeSK     = rule{name: RuleStripeKey, re: reStripeSK, groups: []int{0}}
	ruleStripeRK     = rule{name: RuleStripeKey, re: reStripeRK, groups: []int{0}}
	ruleNPM          = rule{name: RuleNPMToken, re: reNPM, groups: []int{0}}
	ruleCurl         = rule{name: RuleCurlPassword, re: reCurl, groups: []int{1, 2, 3}}
)

// window bounds the text an anchored pattern reads: a URL or a quoted
// value longer than that is not matched whole.
const window = 4096

// maxPasses bounds the passes of the built-in rules over a text that
// keeps changing; two are the rule.
const maxPasses = 4

// redactBuiltin applies the built-in rules until s no longer changes.
func redactBuiltin(s string) string {
	m := scan(s)
	for pass := 0; m != 0 && pass < maxPasses; pass++ {
		t := builtinPass(s, m)
		if t == s {
			break
		}
		s = t
		m = scan(s)
	}
	return s
}

// builtinPass applies, once, the built-in rules whose candidate words m
// holds.
func builtinPass(s string, m trig) string {
	if m&trigBegin != 0 {
		s = rulePrivateKey.apply(s)
	}
	if m&trigSK != 0 {
		s = ruleAnthropic.apply(s)
		s = ruleOpenAI.apply(s)
	}
	if m&trigJWT != 0 {
		s = ruleJWT.apply(s)
	}
	if m&trigGitHub != 0 {
		s = ruleGitHub.apply(s)
		s = ruleGitHubPAT.apply(s)
	}
	if m&trigGitLab != 0 {
		s = ruleGitLab.apply(s)
	}
	if m&trigSlack != 0 {
		s = ruleSlack.apply(s)
	}
	if m&trigSlackHook != 0 {
		s = ruleSlackWebhook.apply(s)
	}
	if m&trigGoogle != 0 {
		s = ruleGoogle.apply(s)
	}
	if m&trigStripe != 0 {
		s = ruleStripeSK.apply(s)
		s = ruleStripeRK.apply(s)
	}
	if m&trigNPM != 0 {
		s = ruleNPM.apply(s)
	}
	if m&trigURL != 0 {
		s = redactURLs(s)
	}
	if m&trigCurl != 0 && strings.Contains(s, "curl") {
		s = ruleCurl.apply(s)
	}
	if m&trigBearer != 0 {
		s = ruleBearer.apply(s)
	}
	if m&trigAKIA != 0 {
		s = ruleAWSAccess.apply(s)
	}
	if m&trigAWS != 0 {
		s = ruleAWSSecret.apply(s)
	}
	if m&trigName != 0 {
		s = redactNamed(s)
	}
	return s
}

// within returns s from i, at most window bytes.
func within(s string, i int) string {
	return s[i:min(len(s), i+window)]
}

// smallWindow is the text an anchored member or assignment pattern reads
// first: the pattern's cost grows with its input, and most matches are
// short.
const smallWindow = 256

// findNamed matches the anchored pattern re at s[q:], first within
// smallWindow bytes, then within window bytes when the short match may
// differ from the long one: no match, a match that reaches the end of the
// short input, or a bare value after a quote (a quoted value that the
// short input cut).
func findNamed(re *regexp.Regexp, s string, q, bare int) []int {
	if len(s)-q <= smallWindow {
		return re.FindStringSubmatchIndex(s[q:])
	}
	w := s[q : q+smallWindow]
	loc := re.FindStringSubmatchIndex(w)
	if loc != nil && loc[1] < len(w) {
		vs := loc[2*bare]
		if bare == 0 || vs <= 0 || (w[vs-1] != '"' && w[vs-1] != '\'') {
			return loc
		}
	}
	return re.FindStringSubmatchIndex(within(s, q))
}

// redactURLs replaces the password of every URL with credentials.
func redactURLs(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		j += i
		i = j + 3
		start := j
		for start > last && isSchemeChar(s[start-1]) {
			start--
		}
		for start < j && !isLetter(s[start]) {
			start++
		}
		if start == j {
			continue
		}
		loc := reURL.FindStringSubmatchIndex(within(s, start))
		if loc == nil {
			continue
		}
		vs, ve := start+loc[2], start+loc[3]
		if IsMarker(s[vs:ve]) {
			i = ve
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Marker(RuleURLPassword))
		last, i = ve, ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// redactNamed replaces the values of JSON members and assignments whose
// names look sensitive. It tries each occurrence of a sensitive word
// (key, token, secret, passw, passphrase, auth, credential) as part of a
// name.
func redactNamed(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+2 < len(s); i++ {
		if nameWordAt(s, i) == 0 {
			continue
		}
		vs, ve, name, ok := matchNamed(s, i, last)
		if !ok {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Marker(name))
		last = ve
		i = ve - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchNamed matches a JSON member or an assignment whose name holds the
// sensitive word at p, not before last. It returns the bounds of the value
// to replace and the rule's name.
func matchNamed(s string, p, last int) (vs, ve int, rule string, ok bool) {
	// A JSON member: the name is quoted, the nearest quote before p.
	for j := p - 1; j >= last && j >= p-64; j-- {
		c := s[j]
		if c == '"' {
			// The pattern's name is the one memberAhead found: a name
			// that is not sensitive spares the pattern.
			end, ok := memberAhead(s, j+1)
			if !ok || !SensitiveName(s[j+1:end]) {
				break
			}
			q := j
			if q > last && s[q-1] == '\\' {
				q--
			}
			if loc := findNamed(reMember, s, q, 0); loc != nil && SensitiveName(s[q+loc[2]:q+loc[3]]) {
				g := 2
				if loc[2*g] < 0 {
					g = 3
				}
				vs, ve = q+loc[2*g], q+loc[2*g+1]
				if !IsMarker(s[vs:ve]) {
					return vs, ve, RuleSecretJSON, true
				}
			}
			break
		}
		if c == '\\' || c == '\r' || c == '\n' {
			break
		}
	}
	// An assignment: the name is the run of name bytes around p, at most
	// its last 64 bytes, maybe in quotes.
	n0 := p
	for n0 > last && isNameChar(s[n0-1]) {
		n0--
	}
	e := p
	for e < len(s) && isNameChar(s[e]) {
		e++
	}
	if e-n0 > 64 {
		n0 = e - 64
	}
	// The pattern's name is s[n0:e] (a shorter run would be followed by a
	// name byte, which no separator is): a name that is not sensitive
	// spares the pattern.
	if !separatorAhead(s, e) || !sensitiveAssigned(s[n0:e]) {
		return 0, 0, "", false
	}
	q := n0
	if q > last && (s[q-1] == '"' || s[q-1] == '\'') {
		q--
		if q > last && s[q-1] == '\\' {
			q--
		}
	}
	loc := findNamed(reAssign, s, q, 5)
	if loc == nil || !sensitiveAssigned(s[q+loc[2]:q+loc[3]]) {
		return 0, 0, "", false
	}
	g := 2
	for g < 5 && loc[2*g] < 0 {
		g++
	}
	vs, ve = q+loc[2*g], q+loc[2*g+1]
	if v := s[vs:ve]; IsMarker(v) || (g == 5 && plainValue(v)) {
		return 0, 0, "", false
	}
	return vs, ve, RuleSecretAssign, true
}

// memberAhead reports whether a JSON member name that starts at s[i:] is
// followed by its closing quote, a colon and a quoted value, as reMember
// requires: a cheap test that spares the pattern most words (and values
// that are objects, arrays, numbers). The name ends at end.
func memberAhead(s string, i int) (end int, ok bool) {
	k := i
	for k < len(s) && k-i <= 64 && s[k] != '"' && s[k] != '\\' && s[k] != '\r' && s[k] != '\n' {
		k++
	}
	end = k
	switch {
	case k+1 < len(s) && s[k] == '\\' && s[k+1] == '"':
		k += 2
	case k < len(s) && s[k] == '"':
		k++
	default:
		return end, false
	}
	k = skipAny(s, k, jsonSpace)
	if k >= len(s) || s[k] != ':' {
		return end, false
	}
	k = skipAny(s, k+1, jsonSpace)
	return end, k < len(s) && (s[k] == '"' || k+1 < len(s) && s[k] == '\\' && s[k+1] == '"')
}

// separatorAhead reports whether the name that ends at s[e] is followed by
// an optional closing quote and an assignment separator, as reAssign
// requires, and not by a single separator and an object (no value
// reAssign matches starts with "{").
func separatorAhead(s string, e int) bool {
	k := e
	switch {
	case k+1 < len(s) && s[k] == '\\' && (s[k+1] == '"' || s[k+1] == '\''):
		k += 2
	case k < len(s) && (s[k] == '"' || s[k] == '\''):
		k++
	}
	k = skipAny(s, k, blanks)
	if k >= len(s) || (s[k] != '=' && s[k] != ':') {
		return false
	}
	if k+1 < len(s) && (s[k+1] == '>' || s[k+1] == '=') {
		return true // "=>", ":=", or a value that starts with "=" or ">"
	}
	k = skipAny(s, k+1, blanks)
	return k >= len(s) || s[k] != '{'
}

// The bytes skipAny skips: JSON's white space, and the blanks of an
// assignment.
const (
	jsonSpace = " \t\r\n"
	blanks    = " \t"
)

// skipAny returns the index of the first byte of s at or after k that is
// not in set.
func skipAny(s string, k int, set string) int {
	for k < len(s) && strings.IndexByte(set, s[k]) >= 0 {
		k++
	}
	return k
}
