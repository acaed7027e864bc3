//go:build !linux

package spill

import (
	"fmt"
	"io/fs"
)

// stamp identifies a file version by size and modification time.
func stamp(fi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano())
}
