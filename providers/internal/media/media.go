package media

import (
	"encoding/base64"
	"strings"

	"github.com/harnessx/harnessx/harness"
)

// Base64 returns data in standard base64. The string is written once, into
// memory of its final size: a 5 MiB image costs one allocation, of
// 6.7 MiB.
func Base64(data []byte) string { return encode("", "", data) }

// DataURL returns "data:<mime>;base64,<data>", built as Base64 is.
func DataURL(mime string, data []byte) string { return encode("data:"+mime, ";base64,", data) }

func encode(head, sep string, data []byte) string {
	var b strings.Builder
	b.Grow(len(head) + len(sep) + base64.StdEncoding.EncodedLen(len(data)))
	b.WriteString(head)
	b.WriteString(sep)
	// Whole groups of 3 bytes in chunks through a stack buffer; padding
	// only at the end.
	var buf [4096]byte
	const chunk = len(buf) / 4 * 3
	for len(data) > 0 {
		n := min(len(data), chunk)
		m := base64.StdEncoding.EncodedLen(n)
		base64.StdEncoding.Encode(buf[:m], data[:n])
		b.Write(buf[:m])
		data = data[n:]
	}
	return b.String()
}

// Loc locates a part in a request: message i, part j of its content, and k
// of the tool result's parts (-1 outside a tool result).
type Loc struct{ Message, Part, ResultPart int }

// Unsupported returns the error for a part that provider cannot send to
// model.
func Unsupported(provider, model string, at Loc, p *harness.Part, reason string) error {
	return &harness.UnsupportedPartError{Provider: provider, Model: model, Message: at.Message, Part: at.Part,
		ResultPart: at.ResultPart, Type: p.Type, MIME: p.MIME(), Reason: reason}
}
