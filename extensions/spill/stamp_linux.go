package spill

import (
	"fmt"
	"io/fs"
	"syscall"
)

// stamp identifies a file version by inode, size, modification and change
// time. The change time cannot be set back from user space, so any write
// changes the stamp.
func stamp(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d:%d.%d:%d.%d", st.Ino, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return ""
}
