package spill

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// grepRef is a plain line-by-line reference of the search output.
func grepRef(data []byte, pattern string, context, maxM int, skip int64) (body string, matches int) {
	re := regexp.MustCompile("(?m)" + pattern)
	lines := bytes.Split(data, nl)
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	var printed int64
	any := false
	emit := func(no int64, line []byte, match bool) {
		if no <= printed {
			return
		}
		if any && no > printed+1 {
			b.WriteString("--\n")
		}
		any = true
		printed = no
		sep := "- "
		if match {
			sep = ": "
		}
		b.WriteString(strconv.FormatInt(no, 10) + sep + text(line) + "\n")
	}
	pending := 0
	for i, line := range lines {
		no := int64(i + 1)
		if matches >= maxM && pending == 0 {
			break
		}
		isMatch := re.Match(line)
		if isMatch && matches >= maxM {
			break
		}
		if isMatch && no > skip {
			for k := max(no-int64(context), 1); k < no; k++ {
				emit(k, lines[k-1], false)
			}
			emit(no, line, true)
			matches++
			pending = context
			continue
		}
		if pending > 0 {
			if isMatch {
				pending = 0
				continue
			}
			emit(no, line, false)
			pending--
		}
	}
	return b.String(), matches
}

// runSearch searches data with chunks of chunk bytes, counting every line
// (run) or, when indexed, with a line index of the data (runIndexed).
func runSearch(t testing.TB, data []byte, a *args, chunk, keep int, indexed bool) (string, int) {
	t.Helper()
	re, err := compilePattern(a.Pattern, a.IgnoreCase)
	if err != nil {
		t.Fatal(err)
	}
	out := newOutput(1 << 30)
	f := nopFile{bytes.NewReader(data)}
	if !indexed {
		s := newSearcher(re, a, out, make([]byte, chunk+keep), keep)
		if err := s.run(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		return out.body.String(), s.matches
	}
	x := newLineIndex(int64(chunk))
	x.write(data)
	s := newSearcher(re, a, out, make([]byte, 2*chunk+keep), keep)
	if err := s.runIndexed(t.Context(), f, chunk, x.index); err != nil {
		t.Fatal(err)
	}
	return out.body.String(), s.matches
}

type nopFile struct{ *bytes.Reader }

func (nopFile) Close() error  { return nil }
func (nopFile) Stamp() string { return "" }

// TestSearchMatchesReference runs the chunked search with tiny chunks, so
// that lines, matches and context straddle chunk boundaries everywhere, and
// compares it with the line-by-line reference.
func TestSearchMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "zanzibar", "delta", "", "ZANZIBAR", "x"}
	var b bytes.Buffer
	for range 3000 {
		n := rng.IntN(5)
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	data := b.Bytes()
	cases := []struct {
		pattern string
		context int
		max     int
		skip    int64
	}{
		{"zanzibar", 0, 1000, 0},
		{"zanzibar", 2, 1000, 0},
		{"zanzibar", 3, 50, 100},
		{"gamma delta", 1, 1000, 0},
		{"^beta", 1, 1000, 0},
		{"x$", 2, 1000, 0},
		{"^$", 1, 1000, 0},
		{"(?i)zanzibar", 1, 1000, 0},
		{"a[lm]+[ap]", 0, 30, 0},
		{"alpha\\s+beta", 0, 1000, 0}, // \s could cross a newline in the chunk; only lines count
		{"z?", 0, 1000, 2990},
	}
	for _, c := range cases {
		for _, chunk := range []int{64, 97, 4096, 1 << 20} {
			for _, indexed := range []bool{false, true} {
				name := fmt.Sprintf("%s/ctx%d/max%d/skip%d/chunk%d/indexed=%v", c.pattern, c.context, c.max, c.skip, chunk, indexed)
				t.Run(name, func(t *testing.T) {
					a := &args{Pattern: c.pattern, Context: c.context, MaxMatches: c.max, Offset: c.skip}
					got, n := runSearch(t, data, a, chunk, 256, indexed)
					want, wn := grepRef(data, c.pattern, c.context, c.max, c.skip)
					if n != wn || got != want {
						t.Fatalf("got %d matches, want %d\n--- got ---\n%.2000s\n--- want ---\n%.2000s", n, wn, got, want)
					}
					if wn == 0 && c.pattern == "zanzibar" {
						t.Fatal("fixture has no match")
					}
				})
			}
		}
	}
}

// FuzzSearch checks the chunked search against the reference on arbitrary
// data and patterns.
func FuzzSearch(f *testing.F) {
	f.Add([]byte("a\nb zanzibar\nc\n"), "zanzibar", uint8(1), uint8(40))
	f.Add([]byte("x\r\ny\n\nz"), "^$", uint8(0), uint8(7))
	f.Add([]byte("foo bar\nbar foo\nfoo"), "foo$", uint8(2), uint8(64))
	f.Add([]byte("\xff\xfe\n\n\nabc"), "b|^", uint8(3), uint8(16))
	f.Fuzz(func(t *testing.T, data []byte, pattern string, ctxN, chunkN uint8) {
		if _, err := regexp.Compile(pattern); err != nil || len(pattern) > 50 {
			return
		}
		chunk := 16 + int(chunkN)
		for l := range bytes.SplitSeq(data, nl) {
			if len(l) >= chunk/2 {
				return // lines longer than a chunk are searched in segments
			}
		}
		c := int(ctxN % 4)
		a := &args{Pattern: pattern, Context: c, MaxMatches: 25}
		got, n := runSearch(t, data, a, chunk, 1024, chunkN%2 == 1)
		want, wn := grepRef(data, pattern, c, 25, 0)
		if n != wn || got != want {
			t.Fatalf("pattern %q ctx %d chunk %d: got %d matches, want %d\n--- got ---\n%s\n--- want ---\n%s", pattern, c, chunk, n, wn, got, want)
		}
	})
}

func TestLineIndex(t *testing.T) {
	cases := []struct {
		name   string
		writes []string
		g      int64
		want   []int64
	}{
		{"empty", nil, 4, []int64{0}},
		{"one write", []string{"a\nb\nc\nd\ne\n"}, 4, []int64{0, 2, 4}},
		{"split writes", []string{"a\n", "b", "\nc\nd", "\ne\n"}, 4, []int64{0, 2, 4}},
		{"exact boundary", []string{"abc\n", "def\n"}, 4, []int64{0, 1, 2}},
		{"no newlines", []string{"abcdefghij"}, 3, []int64{0, 0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newLineIndex(c.g)
			for _, w := range c.writes {
				x.write([]byte(w))
			}
			if fmt.Sprint(x.index) != fmt.Sprint(c.want) {
				t.Errorf("index %v, want %v", x.index, c.want)
			}
		})
	}
}
