package redact

// trig is a set of candidate words found in a text; each enables the
// built-in rules that start from it.
type trig uint8

const (
	trigSK     trig = 1 << iota // "sk-": provider keys
	trigBearer                  // "bearer"
	trigAKIA                    // "akia", "asia": AWS access key IDs
	trigAWS                     // "aws": AWS secret keys
	trigBegin                   // "-----BEGIN": private keys
	trigURL                     // "://" then "user:password@"
	trigName                    // a sensitive word: members and assignments
)

// MayContainSecret reports whether a built-in rule could match s. It is
// one cheap pass over the bytes: false means [Redactor.String] with the
// built-in rules only returns s unchanged.
func MayContainSecret[T string | []byte](s T) bool { return scan(s) != 0 }

// MayContainSecretInJSON reports whether a built-in rule could match s or
// s encoded as a JSON string (by jsonenc.AppendString): it also answers
// true for a control byte whose escape ends in a letter that could start
// a candidate word: "\t", "\b", "\u000b", "\u001a" and "\u001b"
// ("\token", "\bearer", "\u001aws"). The other escapes end in a byte
// that starts none ("\n", "\"", "\\", "\u0000", "\ufffd"), and a quote,
// which every JSON string starts and ends with, is in none. So when it is
// false for every string of a JSON document whose other text is the
// caller's own (member names and punctuation that hold no candidate
// word), the built-in rules leave the document unchanged.
func MayContainSecretInJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\t', '\b', 0x0b, 0x1a, 0x1b:
			return true
		}
	}
	return scan(s) != 0
}

// scan returns the candidate words found in s. It looks at pairs of bytes
// and checks a word only where a pair starts one.
func scan[T string | []byte](s T) trig {
	var m trig
	for i := 0; i+1 < len(s); i++ {
		if !pairStart[s[i]] {
			continue
		}
		switch uint16(s[i]|0x20)<<8 | uint16(s[i+1]|0x20) {
		case 's'<<8 | 'k':
			if hasFold(s, i, "sk-") {
				m |= trigSK
			}
		case 'b'<<8 | 'e':
			if hasFold(s, i, "bearer") {
				m |= trigBearer
			} else if i >= 5 && hasExact(s, i-5, "-----BEGIN") {
				m |= trigBegin
			}
		case 'a'<<8 | 'k':
			if hasFold(s, i, "akia") {
				m |= trigAKIA
			}
		case 'a'<<8 | 's':
			if hasFold(s, i, "asia") {
				m |= trigAKIA
			}
		case 'a'<<8 | 'w':
			if hasFold(s, i, "aws") {
				m |= trigAWS
			}
		case 'a'<<8 | 'u', 'k'<<8 | 'e', 't'<<8 | 'o', 's'<<8 | 'e', 'p'<<8 | 'a':
			if nameWordAt(s, i) > 0 {
				m |= trigName
			}
		case ':'<<8 | '/':
			if m&trigURL == 0 && hasExact(s, i, "://") && urlCredentials(s, i+3) {
				m |= trigURL
			}
		}
	}
	return m
}

// pairStart tells the bytes that may begin a pair scan looks at: those
// that are, ASCII case folded as scan folds them (|0x20), the first byte
// of one of its cases. Most bytes of a text are not, and are passed over
// with one load.
var pairStart = func() (t [256]bool) {
	for b := range 256 {
		switch byte(b) | 0x20 {
		case 's', 'b', 'a', 'k', 't', 'p', ':':
			t[b] = true
		}
	}
	return t
}()

// nameWordAt returns the length of the sensitive word at s[i:], or 0. Its
// first two bytes, ASCII case folded, tell the one word it can be; only
// that word's rest is compared.
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
		w = "passw"
	case 'a'<<8 | 'u':
		w = "authorization"
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
