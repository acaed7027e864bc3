//go:build !linux

package spill

import (
	"fmt"
	"io/fs"
	"time"
)

// stamp identifies a file version by size and modification time; a file
// modified less than racyWindow ago gets no stamp, so it is verified on
// every read until it is older.
func stamp(fi fs.FileInfo) string {
	if time.Since(fi.ModTime()) < racyWindow {
		return ""
	}
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano())
}
