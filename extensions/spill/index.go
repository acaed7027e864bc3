package spill

import (
	"reflect"
	"slices"
	"time"
	"unsafe"
)

// resultIndex holds the entries of the stored results without a pointer
// the garbage collector has to follow: a fixed-size record each, the
// strings in one append-only byte arena, the stores, directories and time
// zones in small tables the records number. An index of thousands of
// results is then a few noscan objects, which a collection neither scans
// nor marks one by one (an entry of Go strings, an interface and a slice
// held about a dozen pointers: 2,000 results added ~0.5 MB for every
// collection to scan, and lengthened every mark phase of the agent's
// process). Results are never removed (Teardown drops the whole index),
// so the arena only grows; a string decoded from it views the arena and
// stays valid, since bytes once written are never written again. Guarded
// by Extension.mu.
type resultIndex struct {
	byID  map[[idLen]byte]int32 // record of each id (ids are ValidID)
	recs  []indexRec
	strs  []byte    // the records' strings
	lines []int64   // the records' line indexes
	tabs  indexTabs // the few values records share, by number
}

// indexTabs are the values records refer to by number. They hold
// pointers, but one each per store, directory or time zone, not one per
// result (a store whose type is not comparable gets one per result).
type indexTabs struct {
	stores []Store
	dirs   []string
	zones  []fixedZone
}

// fixedZone is the zone of a creation time: its name and offset then, and
// the first location seen with them.
type fixedZone struct {
	name string
	off  int
	loc  *time.Location
}

// indexRec is one result's entry, pointer-free.
type indexRec struct {
	str                  uint32 // offset in strs of ID, tool, call ID, type, SHA-256, verified, missing
	tool, call, typ, sha uint32 // lengths
	verified, missing    uint32
	size, nlines         int64
	createdSec           int64
	createdNsec          int32
	zone                 int32  // zoneUTC, zoneLocal, or i: zones[i]
	store, dir           uint32 // stores[store], dirs[dir]
	lineOff, lineN       uint32
	linesKind            uint8 // linesNone, linesOne (oneChunk) or linesOwn (lines[lineOff:lineOff+lineN])
	isError              bool
}

// The zones of indexRec.zone that are not fixed ones.
const (
	zoneUTC   = -1
	zoneLocal = -2
)

const (
	linesNone = iota
	linesOne
	linesOwn
)

// len returns the number of results.
func (x *resultIndex) len() int { return len(x.recs) }

// indexKey returns the map key of id; false when id is not a valid one
// (no such id is ever put).
func indexKey(id string) (k [idLen]byte, ok bool) {
	if !ValidID(id) {
		return k, false
	}
	copy(k[:], id)
	return k, true
}

// get returns the entry of id.
func (x *resultIndex) get(id string) (*entry, bool) {
	k, ok := indexKey(id)
	if !ok {
		return nil, false
	}
	i, ok := x.byID[k]
	if !ok {
		return nil, false
	}
	en := x.decode(i)
	return &en, true
}

// put adds en, or replaces the entry of its id. Its id must be ValidID
// (spilled and adopted results have the ids newID makes; loaded ones are
// validated first).
func (x *resultIndex) put(en entry) {
	k, ok := indexKey(en.meta.ID)
	if !ok {
		panic("spill: index: invalid id " + en.meta.ID)
	}
	r := indexRec{size: en.meta.Size, nlines: en.meta.Lines, isError: en.meta.IsError}
	r.str = uint32(len(x.strs))
	x.strs = append(x.strs, en.meta.ID...)
	r.tool = x.appendStr(en.meta.Tool)
	r.call = x.appendStr(en.meta.CallID)
	r.typ = x.appendStr(string(en.meta.Type))
	r.sha = x.appendStr(en.meta.SHA256)
	r.verified = x.appendStr(en.verified)
	r.missing = x.appendStr(en.missing)
	x.setCreated(&r, en.meta.Created)
	r.store = x.storeIndex(en.store)
	r.dir = uint32(tabIndex(&x.tabs.dirs, en.dir, func(a, b string) bool { return a == b }))
	x.setLines(&r, en.lines)
	if x.byID == nil {
		x.byID = map[[idLen]byte]int32{}
	}
	if i, ok := x.byID[k]; ok {
		x.recs[i] = r
		return
	}
	x.byID[k] = int32(len(x.recs))
	x.recs = append(x.recs, r)
}

// setVerified records that the version of id with stamp was verified and
// has the line index lines.
func (x *resultIndex) setVerified(id, stamp string, lines []int64) {
	k, ok := indexKey(id)
	if !ok {
		return
	}
	i, ok := x.byID[k]
	if !ok {
		return
	}
	en := x.decode(i)
	if en.verified == stamp && slices.Equal(en.lines, lines) && (en.lines == nil) == (lines == nil) {
		return // a read verified the same version again (WithVerifyEveryRead): nothing to keep
	}
	r := x.recs[i]
	// The strings move to the end of the arena with the new stamp; the
	// old bytes stay (decoded strings may view them).
	str := uint32(len(x.strs))
	x.strs = append(x.strs, en.meta.ID...)
	for _, s := range []string{en.meta.Tool, en.meta.CallID, string(en.meta.Type), en.meta.SHA256} {
		x.strs = append(x.strs, s...)
	}
	r.str = str
	r.verified = x.appendStr(stamp)
	r.missing = x.appendStr(en.missing)
	x.setLines(&r, lines)
	x.recs[i] = r
}

// each calls fn with every entry, in no particular order, until it
// returns false.
func (x *resultIndex) each(fn func(en *entry) bool) {
	for i := range x.recs {
		en := x.decode(int32(i))
		if !fn(&en) {
			return
		}
	}
}

func (x *resultIndex) appendStr(s string) uint32 {
	x.strs = append(x.strs, s...)
	return uint32(len(s))
}

// setCreated records t: its instant, and its zone (UTC, Local, or a fixed
// zone of its name and offset, as parsing a session's JSON makes).
func (x *resultIndex) setCreated(r *indexRec, t time.Time) {
	r.createdSec, r.createdNsec = t.Unix(), int32(t.Nanosecond())
	switch loc := t.Location(); loc {
	case time.UTC:
		r.zone = zoneUTC
	case time.Local:
		r.zone = zoneLocal
	default:
		name, off := t.Zone()
		r.zone = int32(tabIndex(&x.tabs.zones, fixedZone{name, off, loc}, func(a, b fixedZone) bool {
			return a.name == b.name && a.off == b.off
		}))
	}
}

// storeIndex returns the number of st in the store table, adding it when
// new. A store of a type that is not comparable is added each time,
// without a search (it would grow with the results).
func (x *resultIndex) storeIndex(st Store) uint32 {
	if t := reflect.TypeOf(st); t != nil && !t.Comparable() {
		x.tabs.stores = append(x.tabs.stores, st)
		return uint32(len(x.tabs.stores) - 1)
	}
	return uint32(tabIndex(&x.tabs.stores, st, sameStore))
}

// sameStore reports whether a and b are the same store. A store of a type
// that is not comparable is never the same as another.
func sameStore(a, b Store) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && (ta == nil || ta.Comparable()) && a == b
}

func (x *resultIndex) setLines(r *indexRec, lines []int64) {
	switch {
	case lines == nil:
		r.linesKind = linesNone
	case len(lines) == 1 && lines[0] == 0:
		r.linesKind = linesOne
	default:
		r.linesKind, r.lineOff, r.lineN = linesOwn, uint32(len(x.lines)), uint32(len(lines))
		x.lines = append(x.lines, lines...)
	}
}

// decode returns the entry of record i. Its strings view the arena.
func (x *resultIndex) decode(i int32) entry {
	r := &x.recs[i]
	p := int(r.str)
	next := func(n int) string {
		if n == 0 {
			return ""
		}
		s := unsafe.String(&x.strs[p], n)
		p += n
		return s
	}
	var en entry
	en.meta.ID = next(idLen)
	en.meta.Tool = next(int(r.tool))
	en.meta.CallID = next(int(r.call))
	en.meta.Type = Type(next(int(r.typ)))
	en.meta.SHA256 = next(int(r.sha))
	en.verified = next(int(r.verified))
	en.missing = next(int(r.missing))
	en.meta.Size, en.meta.Lines, en.meta.IsError = r.size, r.nlines, r.isError
	t := time.Unix(r.createdSec, int64(r.createdNsec))
	switch r.zone {
	case zoneUTC:
		t = t.UTC()
	case zoneLocal:
		t = t.Local()
	default:
		t = t.In(x.tabs.zones[r.zone].loc)
	}
	en.meta.Created = t
	en.store = x.tabs.stores[r.store]
	en.dir = x.tabs.dirs[r.dir]
	switch r.linesKind {
	case linesOne:
		en.lines = oneChunk
	case linesOwn:
		en.lines = x.lines[r.lineOff : r.lineOff+r.lineN : r.lineOff+r.lineN]
	}
	return en
}

// tabIndex returns the index of v in *tab, adding it when new.
func tabIndex[T any](tab *[]T, v T, eq func(a, b T) bool) int {
	for i, w := range *tab {
		if eq(w, v) {
			return i
		}
	}
	*tab = append(*tab, v)
	return len(*tab) - 1
}
