package traceview

import (
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/internal/partref"
)

// partContentSecurityPolicy is the policy of a served part: whatever the
// bytes are, nothing in them runs, loads or submits; an image shows.
const partContentSecurityPolicy = "default-src 'none'; img-src 'self'; sandbox; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// imageTypes are the MIME types served as images, as the server writes
// them: never image/svg+xml, which can hold script.
var imageTypes = map[string]string{
	"image/png":  "image/png",
	"image/jpeg": "image/jpeg",
	"image/gif":  "image/gif",
	"image/webp": "image/webp",
}

// maxPartBytes caps a part the viewer serves.
const maxPartBytes = flight.MaxArtifactBytes

// partSum returns the digest named by the last element of a part's path,
// partref.FileName's "sha256-<64 lowercase hex digits>".
func partSum(name string) ([32]byte, bool) {
	return flight.ParsePartMemberName(flight.PartsDir + name)
}

// part serves the bytes of a media part, found by their SHA-256 in the
// recordings and incident bundles of the flight directories, and checked
// against it. With ?type= one of imageTypes, and bytes whose sniffed type
// is that type, it serves an image; with that type and other bytes, 415;
// with any other type or none, a download (application/octet-stream,
// attachment). A name that is not a part reference is a 400, a part found
// nowhere intact a 404.
func (h *handler) part(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", partContentSecurityPolicy)
	sum, ok := partSum(r.PathValue("name"))
	if !ok {
		http.Error(w, "traceview: not a part reference (sha256-<64 lowercase hex digits>)", http.StatusBadRequest)
		return
	}
	data, ok := h.findPart(sum)
	if !ok {
		http.Error(w, "traceview: no intact copy of this part", http.StatusNotFound)
		return
	}
	file := partref.FileName(sum)
	if served, ok := imageTypes[r.URL.Query().Get("type")]; ok {
		if http.DetectContentType(data) != served {
			http.Error(w, "traceview: the part's bytes are not "+served, http.StatusUnsupportedMediaType)
			return
		}
		hd.Set("Content-Type", served)
		hd.Set("Content-Disposition", `inline; filename="`+file+`"`)
		w.Write(data)
		return
	}
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", `attachment; filename="`+file+`"`)
	w.Write(data)
}

// findPart returns the bytes whose SHA-256 is sum: a recording's copy
// (<recording>/parts/sha256-<hex>, a regular file), else a bundle's
// member. Copies whose bytes do not match sum are passed over.
func (h *handler) findPart(sum [32]byte) ([]byte, bool) {
	file := partref.FileName(sum)
	for _, root := range h.opts.Sources.FlightDirs {
		dirs, _ := recordingDirs(root)
		for _, rec := range dirs {
			if data, ok := readPartFile(filepath.Join(rec, "parts", file), sum); ok {
				return data, true
			}
		}
	}
	name := flight.PartMemberName(sum)
	for _, p := range h.index.Catalog().parts[sum] {
		b, err := flight.ReadBundleFile(p, flight.ReadOptions{Keep: func(n string) bool { return n == name }})
		if err != nil {
			continue
		}
		if data, ok := b.Member(name); ok && sha256.Sum256(data) == sum {
			return data, true
		}
	}
	return nil, false
}

// readPartFile reads a part file that is a regular file (not a link)
// within the size cap and holds the bytes of sum.
func readPartFile(p string, sum [32]byte) ([]byte, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPartBytes {
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil || sha256.Sum256(data) != sum {
		return nil, false
	}
	return data, true
}

// bundleParts adds the part members of the bundle at path to idx.
func bundleParts(idx map[[32]byte][]string, path string, b *flight.Bundle) {
	for _, n := range b.Parts() {
		if sum, ok := partSum(strings.TrimPrefix(n, flight.PartsDir)); ok {
			idx[sum] = append(idx[sum], path)
		}
	}
}
