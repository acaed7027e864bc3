package media

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// StreamThreshold is the size from which an Inliner streams a part's
// base64 into the request body instead of building the string.
const StreamThreshold = 16 << 10

// Inliner puts large inline bytes into a request body as base64 without
// building the base64 text, or a JSON body that holds it, in memory. The
// vendor SDKs encode a request by marshalling each nested value into its
// own buffer, so a 5 MiB image, as a 6.7 MiB base64 string, would be
// copied once per level (some ten times per request). Instead, the request
// carries a short unique token where the base64 goes (Base64, DataURL),
// and Middleware, installed as the request's SDK middleware, sends a body
// in which each token is replaced by the encoding, streamed from the
// original bytes as the body is read. Below StreamThreshold the string is
// built as usual. The zero Inliner is ready; it is for one request.
type Inliner struct {
	nonce string
	items []item
}

type item struct {
	token  string
	prefix string // "data:<mime>;base64," for a data URL
	data   []byte
}

// Base64 returns the base64 of data, or a token that Middleware replaces
// by it.
func (in *Inliner) Base64(data []byte) string {
	if len(data) < StreamThreshold {
		return Base64(data)
	}
	return in.add("", data)
}

// DataURL returns "data:<mime>;base64,<data>", or a token that Middleware
// replaces by it.
func (in *Inliner) DataURL(mime string, data []byte) string {
	if len(data) < StreamThreshold {
		return DataURL(mime, data)
	}
	return in.add("data:"+mime+";base64,", data)
}

// Streams reports whether the request holds tokens, so that Middleware
// must be installed.
func (in *Inliner) Streams() bool { return len(in.items) > 0 }

func (in *Inliner) add(prefix string, data []byte) string {
	if in.nonce == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		in.nonce = "hxmedia-" + hex.EncodeToString(b[:]) + "-"
	}
	tok := in.nonce + strconv.Itoa(len(in.items))
	in.items = append(in.items, item{token: tok, prefix: prefix, data: data})
	return tok
}

// Middleware sends req with each token of its body replaced by its
// encoding. The SDK's request keeps its own body, so a retry encodes
// again from the original bytes. A token that is not in the body exactly
// once (the SDK escaped or dropped it) is an error, and nothing is sent.
func (in *Inliner) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if len(in.items) == 0 || req.Body == nil {
		return next(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	// The body is cut at each token, in the order they appear.
	type cut struct {
		at int
		it *item
	}
	cuts := make([]cut, 0, len(in.items))
	size := int64(len(body))
	for i := range in.items {
		it := &in.items[i]
		at := bytes.Index(body, []byte(it.token))
		if at < 0 || bytes.Contains(body[at+len(it.token):], []byte(it.token)) {
			return nil, fmt.Errorf("media: the request body does not hold the token of part %d once", i)
		}
		cuts = append(cuts, cut{at, it})
		size += int64(len(it.prefix)+base64.StdEncoding.EncodedLen(len(it.data))) - int64(len(it.token))
	}
	for i := 1; i < len(cuts); i++ { // few items: insertion sort by position
		for j := i; j > 0 && cuts[j].at < cuts[j-1].at; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	open := func() (io.ReadCloser, error) {
		rs := make([]io.Reader, 0, 3*len(cuts)+1)
		pos := 0
		for _, c := range cuts {
			rs = append(rs, bytes.NewReader(body[pos:c.at]))
			if c.it.prefix != "" {
				rs = append(rs, bytes.NewReader([]byte(c.it.prefix)))
			}
			rs = append(rs, &encoder{src: c.it.data})
			pos = c.at + len(c.it.token)
		}
		rs = append(rs, bytes.NewReader(body[pos:]))
		return io.NopCloser(io.MultiReader(rs...)), nil
	}
	r := req.Clone(req.Context())
	r.Body, _ = open()
	r.GetBody = open
	r.ContentLength = size
	return next(r)
}

// encoder reads src as standard base64.
type encoder struct {
	src  []byte
	tail [4]byte // encoded bytes not yet read
	nt   int
}

func (e *encoder) Read(p []byte) (int, error) {
	n := 0
	if e.nt > 0 {
		c := copy(p, e.tail[4-e.nt:])
		e.nt -= c
		n += c
		p = p[c:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(e.src) == 0 {
		if n > 0 {
			return n, nil
		}
		return 0, io.EOF
	}
	if k := min(len(p)/4*3, len(e.src)); k > 0 {
		if k < len(e.src) {
			k -= k % 3 // padding only at the end
		}
		base64.StdEncoding.Encode(p, e.src[:k])
		e.src = e.src[k:]
		return n + base64.StdEncoding.EncodedLen(k), nil
	}
	// Less room than one group: encode it aside.
	k := min(3, len(e.src))
	base64.StdEncoding.Encode(e.tail[:], e.src[:k])
	e.src, e.nt = e.src[k:], 4
	c := copy(p, e.tail[:])
	e.nt -= c
	return n + c, nil
}
