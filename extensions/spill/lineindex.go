package spill

import "bytes"

// lineIndex records how many newlines come before each multiple of a
// granularity (the search chunk size): index[i] is the number of
// newlines in the first i*g bytes. With it, a search needs to count lines
// only in the chunks where something matched.
type lineIndex struct {
	g        int64
	size     int64
	newlines int64
	index    []int64
}

func newLineIndex(g int64) *lineIndex { return &lineIndex{g: g, index: []int64{0}} }

// write accounts for p, the next bytes of the content.
func (x *lineIndex) write(p []byte) {
	for len(p) > 0 {
		room := x.g - x.size%x.g
		part := p[:min(int64(len(p)), room)]
		x.newlines += int64(bytes.Count(part, nl))
		x.size += int64(len(part))
		if x.size%x.g == 0 {
			x.index = append(x.index, x.newlines)
		}
		p = p[len(part):]
	}
}
