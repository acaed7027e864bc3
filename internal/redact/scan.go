package redact

// trig is a set of candidate words found in a text; each enables the
// built-in rules that start from it.
type trig uint16

const (
	trigSK        trig = 1 << iota // "sk-": provider keys
	trigBearer                     // "bearer"
	trigAKIA                       // "akia", "asia": AWS access key IDs
	trigAWS                        // "aws": AWS secret keys
	trigBegin                      // "-----BEGIN": private keys
	trigURL                        // "://" then "user:password@"
	trigName                       // a sensitive word: members and assignments
	trigJWT                        // ".eyJ": the payload of a JSON Web Token
	trigGitHub                     // "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"
	trigGitLab                     // "glpat-"
	trigSlack                      // "xox": Slack tokens
	trigSlackHook                  // "hooks.slack.com/": Slack webhook URLs
	trigGoogle                     // "AIza": Google API keys
	trigStripe                     // "sk_live_", "rk_test_" …: Stripe keys
	trigNPM                        // "npm_": npm tokens
	trigCurl                       // "-u": curl -u or --user
)

// MayContainSecret reports whether a built-in rule could match s. It is
// one cheap pass over the bytes: false means [Redactor.String] with the
// built-in rules only returns s unchanged.
func MayContainSecret[T string | []byte](s T) bool { return scan(s) != 0 }

// MayContainSecretInJSON reports whether a built-in rule could match s or
// s encoded as a JSON string (by jsonenc.AppendString): it also answers
// true for a control byte whose escape ends in a letter that could start
// a candidate word: "\t", "\b", "\u000b", "\u001a", "\u001b" and
// "\u001c" ("\token", "\bearer", "\u001aws", "\u001credentials"). The
// other escapes end in a byte that starts none ("\n", "\"", "\\",
// "\u0000", "\ufffd"), or, for "\n" and "\r" before "pm_" and "k_live_",
// scan counts the control byte as the letter; and a quote, which every
// JSON string starts and ends with, is in none. So when it is false for
// every string of a JSON document whose other text is the caller's own
// (member names and punctuation that hold no candidate word), the
// built-in rules leave the document unchanged.
func MayContainSecretInJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\t', '\b', 0x0b, 0x1a, 0x1b, 0x1c:
			return true
		}
	}
	return scan(s) != 0
}

// scan returns the candidate words found in s. It looks at pairs of bytes
// and checks a word only where a pair starts one: two table loads tell
// the pair (ASCII case folded) and most bytes are passed over after the
// first.
func scan[T string | []byte](s T) trig {
	var m trig
	for i := 0; i+1 < len(s); i++ {
		row := pairRow[s[i]]
		if row == 0 {
			continue
		}
		switch pairCase[row&(pairRows-1)][s[i+1]] {
		case 0:
		case pSK:
			if hasFold(s, i, "sk-") {
				m |= trigSK
			}
		case pBE:
			if hasFold(s, i, "bearer") {
				m |= trigBearer
			} else if i >= 5 && hasExact(s, i-5, "-----BEGIN") {
				m |= trigBegin
			}
		case pAK:
			if hasFold(s, i, "akia") {
				m |= trigAKIA
			}
		case pAS:
			if hasFold(s, i, "asia") {
				m |= trigAKIA
			}
		case pAW:
			if hasFold(s, i, "aws") {
				m |= trigAWS
			}
		case pName:
			if nameWordAt(s, i) > 0 {
				m |= trigName
			}
		case pURL:
			if m&trigURL == 0 && hasExact(s, i, "://") && urlCredentials(s, i+3) {
				m |= trigURL
			}
		case pTI:
			if i >= 6 && hasFold(s, i-6, "credenti") {
				m |= trigName
			}
		case pDotE:
			if hasExact(s, i, ".eyJ") {
				m |= trigJWT
			}
		case pGH:
			if gitHubAt(s, i) {
				m |= trigGitHub
			}
		case pGI:
			if hasExact(s, i, "github_pat_") {
				m |= trigGitHub
			}
		case pGL:
			if hasExact(s, i, "glpat-") {
				m |= trigGitLab
			}
		case pXO:
			if hasExact(s, i, "xox") {
				m |= trigSlack
			}
		case pSL:
			if i >= 6 && hasExact(s, i-6, "hooks.slack.com/") {
				m |= trigSlackHook
			}
		case pAI:
			if hasExact(s, i, "AIza") {
				m |= trigGoogle
			}
		case pKUnderscore:
			// "\r" too: JSON encodes it as "\r", which then reads "rk_".
			if i >= 1 && s[i] == 'k' && s[i+1] == '_' && (s[i-1] == 's' || s[i-1] == 'r' || s[i-1] == '\r') &&
				(hasExact(s, i+2, "live_") || hasExact(s, i+2, "test_")) {
				m |= trigStripe
			}
		case pPM:
			// "\n" too: JSON encodes it as "\n", which then reads "npm_".
			if i >= 1 && (s[i-1] == 'n' || s[i-1] == '\n') && hasExact(s, i, "pm_") {
				m |= trigNPM
			}
		case pDashU:
			if s[i] == '-' && s[i+1] == 'u' {
				m |= trigCurl
			}
		}
	}
	return m
}

// The pairs of bytes that scan checks, ASCII case folded (|0x20, so '_'
// reads 0x7f): each starts a candidate word, or is inside one at a known
// distance from its start.
const (
	pSK          = iota + 1 // sk-
	pBE                     // bearer, -----BEGIN
	pAK                     // akia
	pAS                     // asia
	pAW                     // aws
	pName                   // key, token, secret, passw, passphrase, auth
	pURL                    // ://
	pTI                     // credenti(al)
	pDotE                   // .eyJ
	pGH                     // ghp_ …
	pGI                     // github_pat_
	pGL                     // glpat-
	pXO                     // xox
	pSL                     // hooks.slack.com/
	pAI                     // AIza
	pKUnderscore            // sk_live_, rk_test_ …
	pPM                     // npm_
	pDashU                  // -u
)

var scanPairs = []struct {
	a, b byte // folded
	id   uint8
}{
	{'s', 'k', pSK}, {'b', 'e', pBE}, {'a', 'k', pAK}, {'a', 's', pAS}, {'a', 'w', pAW},
	{'a', 'u', pName}, {'k', 'e', pName}, {'t', 'o', pName}, {'s', 'e', pName}, {'p', 'a', pName},
	{':', '/', pURL}, {'t', 'i', pTI}, {'.', 'e', pDotE}, {'g', 'h', pGH}, {'g', 'i', pGI}, {'g', 'l', pGL},
	{'x', 'o', pXO}, {'s', 'l', pSL}, {'a', 'i', pAI}, {'k', '_' | 0x20, pKUnderscore}, {'p', 'm', pPM},
	{'-', 'u', pDashU},
}

// pairRows bounds the rows of pairCase: one per first byte of scanPairs,
// and row 0 for none. A power of two, so that scan's index needs no
// bounds check.
const pairRows = 16

// pairRow gives, for each byte, its row of pairCase when the byte, ASCII
// case folded, is the first of one of scanPairs, else 0: most bytes of a
// text are passed over with this one load. pairCase gives, for a row and
// the next byte, the pair's id or 0.
var pairRow, pairCase = func() (rows [256]uint8, cases [pairRows][256]uint8) {
	next := uint8(1)
	for _, p := range scanPairs {
		r := uint8(0)
		for b := range 256 {
			if byte(b)|0x20 == p.a && rows[b] != 0 {
				r = rows[b]
			}
		}
		if r == 0 {
			r = next
			next++
			for b := range 256 {
				if byte(b)|0x20 == p.a {
					rows[b] = r
				}
			}
		}
		for b := range 256 {
			if byte(b)|0x20 == p.b {
				cases[r][b] = p.id
			}
		}
	}
	if next > pairRows {
		panic("redact: too many first bytes in scanPairs")
	}
	return rows, cases
}()

// gitHubAt reports whether a classic GitHub token prefix starts at s[i:]:
// "gh" then p, o, u, s or r and "_".
func gitHubAt[T string | []byte](s T, i int) bool {
	if i+3 < len(s) && s[i] == 'g' && s[i+1] == 'h' && s[i+3] == '_' {
		switch s[i+2] {
		case 'p', 'o', 'u', 's', 'r':
			return true
		}
	}
	return false
}

// nameWordAt returns the length of the sensitive word at s[i:], or 0: key,
// token, secret, passw, passphrase, auth or credential. Its first two
// bytes, ASCII case folded, tell the word it can be (passw or passphrase
// for "pa"); only that word's rest is compared.
func nameWordAt[T string | []byte](s T, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	var w string
	switch uint16(s[i]|0x20)<<8 | uint16(s[i+1]|0x20) {
	case 'k'<<8 | 'e':
		w = "key"
	case 't'<<8 | 'o':
		w = "token"
	case 's'<<8 | 'e':
		w = "secret"
	case 'p'<<8 | 'a':
		if hasFold(s, i+2, "ssw") {
			return len("passw")
		}
		w = "passphrase"
	case 'a'<<8 | 'u':
		w = "auth"
	case 'c'<<8 | 'r':
		w = "credential"
	default:
		return 0
	}
	if !hasFold(s, i+2, w[2:]) {
		return 0
	}
	return len(w)
}

// urlCredentials reports whether the authority that starts at s[i:] may
// hold "user:password@": a ':' then a '@' before a byte that ends a URL's
// password, within the window the URL rule reads.
func urlCredentials[T string | []byte](s T, i int) bool {
	colon := false
	for j := i; j < len(s) && j < i+window; j++ {
		switch c := s[j]; c {
		case ':':
			colon = true
		case '@':
			if colon {
				return true
			}
		case ' ', '\t', '\n', '\r', '\f', '/', '"', '\'', '\\', '<', '>':
			return false
		}
	}
	return false
}

// hasFold reports whether s[i:] starts with the lower-case ASCII word p,
// ignoring ASCII case.
func hasFold[T string | []byte](s T, i int, p string) bool {
	if len(s)-i < len(p) {
		return false
	}
	for k := 0; k < len(p); k++ {
		c := s[i+k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[k] {
			return false
		}
	}
	return true
}

// hasExact reports whether s[i:] starts with p.
func hasExact[T string | []byte](s T, i int, p string) bool {
	if len(s)-i < len(p) {
		return false
	}
	for k := 0; k < len(p); k++ {
		if s[i+k] != p[k] {
			return false
		}
	}
	return true
}
