package spill

import (
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// stamp identifies a file version by inode, size, modification and change
// time. The change time cannot be set back from user space, so any write
// changes the stamp — except a write within the same clock tick as the
// last verification: a file changed less than racyWindow ago gets no stamp
// (""), which makes every read verify it until it is older (the way git
// treats "racily clean" index entries).
func stamp(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if time.Since(time.Unix(st.Ctim.Sec, st.Ctim.Nsec)) < racyWindow {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d.%d:%d.%d", st.Ino, st.Size,
		st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}
