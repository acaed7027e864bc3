package flight

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessx/harnessx/internal/partref"
)

// The recording's part store: with WithIncludeArtifacts, the bytes of the
// media parts the recorder saw, one file each under <recording>/parts/,
// named by their SHA-256 and written once. The snapshotter writes the
// parts queued by the hooks (partTracker); the run never waits for the
// disk. Parts and artifact copies share the recording's artifact limit:
// to make room, the least recently named parts are deleted first.

// queueSessionPart queues bytes found inline in a session snapshot, for a
// part the hooks did not see (a session restored from elsewhere).
func (x *Extension) queueSessionPart(sum [32]byte, data []byte) {
	x.parts.mu.Lock()
	x.queuePartLocked(sum, data)
	x.parts.mu.Unlock()
}

// syncParts writes the queued parts into the recording. It runs on the
// snapshotter, at a turn's completion and before a bundle; artMu
// serializes it with the artifact copies, whose limit it shares.
func (x *Extension) syncParts() {
	x.artMu.Lock()
	defer x.artMu.Unlock()
	if !x.partsDirty.Swap(false) && x.partsScanned {
		return
	}
	x.mu.Lock()
	open := x.journal != nil
	dir := x.dir
	x.mu.Unlock()
	if !open {
		return
	}
	if !x.partsScanned {
		x.partsScanned = true
		x.scanPartsLocked(dir)
	}
	t := &x.parts
	t.mu.Lock()
	q := t.queue
	t.queue, t.queued = nil, 0
	t.mu.Unlock()
	for _, p := range q {
		if _, ok := x.partFiles[p.sum]; ok {
			continue
		}
		n := int64(len(p.data))
		if !x.makeRoomLocked(n) {
			x.partSkip.Add(1)
			x.forgetPart(p.sum)
			continue
		}
		if err := writePart(dir, p.sum, p.data); err != nil {
			x.partSkip.Add(1)
			x.forgetPart(p.sum)
			if x.partFail.Add(1) == 1 && x.ec != nil {
				x.ec.Logger().Warn("flight: keeping a media part failed; Stats counts the parts skipped", "err", err)
			}
			continue
		}
		x.partFiles[p.sum] = n
		x.partBytes += n
		x.partKept.Add(1)
	}
}

// forgetPart drops sum from the parts stored or queued, so that the next
// run that names it queues it again.
func (x *Extension) forgetPart(sum [32]byte) {
	x.parts.mu.Lock()
	delete(x.parts.used, sum)
	x.parts.mu.Unlock()
}

// makeRoomLocked deletes the least recently named parts until n more
// bytes fit within the artifact limit, with the artifact copies and the
// parts kept. It reports false, deleting nothing, when n cannot fit even
// without any part. artMu must be held.
func (x *Extension) makeRoomLocked(n int64) bool {
	limit := x.cfg.artifactBytes
	if x.keptBytes+n > limit {
		return false
	}
	for x.keptBytes+x.partBytes+n > limit && len(x.partFiles) > 0 {
		x.parts.mu.Lock()
		var victim [32]byte
		oldest, found := uint64(0), false
		for sum := range x.partFiles {
			if u := x.parts.used[sum]; !found || u < oldest {
				victim, oldest, found = sum, u, true
			}
		}
		delete(x.parts.used, victim)
		x.parts.mu.Unlock()
		err := os.Remove(filepath.Join(x.dir, filepath.FromSlash(PartMemberName(victim))))
		if err != nil && !errors.Is(err, fs.ErrNotExist) && x.ec != nil {
			x.ec.Logger().Warn("flight: deleting a media part", "err", err)
		}
		x.partBytes -= x.partFiles[victim]
		delete(x.partFiles, victim)
		x.partEvict.Add(1)
	}
	return true
}

// scanPartsLocked adopts the parts an earlier process left in the
// recording (the same session recorded again) and removes its unfinished
// temporary files. artMu must be held.
func (x *Extension) scanPartsLocked(dir string) {
	pd := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(PartsDir, "/")))
	ents, err := os.ReadDir(pd)
	if err != nil {
		return
	}
	x.parts.mu.Lock()
	defer x.parts.mu.Unlock()
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			os.Remove(filepath.Join(pd, e.Name()))
			continue
		}
		sum, ok := ParsePartMemberName(PartsDir + e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if _, ok := x.partFiles[sum]; ok {
			continue
		}
		x.partFiles[sum] = fi.Size()
		x.partBytes += fi.Size()
		if x.parts.used == nil {
			x.parts.used = map[[32]byte]uint64{}
		}
		if _, ok := x.parts.used[sum]; !ok {
			x.parts.used[sum] = 0
		}
	}
}

// writePart writes data into <dir>/parts/sha256-<hex> (mode 0600) through
// a temporary file renamed into place, so that a part file is always
// whole. The bytes must still have the SHA-256 sum. An existing file is
// kept.
func writePart(dir string, sum [32]byte, data []byte) error {
	if sha256.Sum256(data) != sum {
		return errors.New("the part's bytes changed since it was sent")
	}
	pd := filepath.Join(dir, "parts")
	if err := os.MkdirAll(pd, 0o700); err != nil {
		return err
	}
	dst := filepath.Join(pd, partref.FileName(sum))
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return nil
	}
	return writeFileAtomic(dst, data)
}
