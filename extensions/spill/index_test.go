package spill

import (
	"reflect"
	"testing"
	"time"
)

// mapStore is a store whose type is not comparable.
type mapStore struct {
	Store
	m map[string]string
}

// TestResultIndexRoundTrip checks that the index gives back every field
// of what it was given: the creation time's instant and zone (UTC, Local,
// fixed, named), the stores (comparable or not), line indexes of each
// kind, stamps and missing reasons, and after a verification that only
// the stamp and the line index changed.
func TestResultIndexRoundTrip(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	own := &DirStore{}
	other := mapStore{m: map[string]string{}}
	base := time.Date(2026, 12, 2, 19, 30, 0, 123456789, time.UTC)
	ens := []entry{
		{meta: Meta{ID: "res_000000000000000000000001", Tool: "t", CallID: "c1", Size: 10, Lines: 1, Type: TypeText,
			SHA256: "ab", Created: base}, store: own, dir: "/d", verified: "s1", lines: []int64{0}},
		{meta: Meta{ID: "res_000000000000000000000002", Tool: "tool with a longer name", Size: 1 << 40, Lines: 7, Type: TypeCSV,
			IsError: true, Created: base.In(time.FixedZone("", -5*3600))}, store: own, dir: "/d", lines: []int64{0, 4096, 8192}},
		{meta: Meta{ID: "res_000000000000000000000003", Created: base.In(paris)}, store: other, missing: "its file is gone from /x"},
		{meta: Meta{ID: "res_000000000000000000000004", Created: base.Local()}, store: other},
		{meta: Meta{ID: "res_000000000000000000000005"}, store: nil},
	}
	var x resultIndex
	for _, en := range ens {
		x.put(en)
	}
	check := func(want entry) {
		t.Helper()
		got, ok := x.get(want.meta.ID)
		if !ok {
			t.Fatalf("%s not found", want.meta.ID)
		}
		if !got.meta.Created.Equal(want.meta.Created) || got.meta.Created.Location().String() != want.meta.Created.Location().String() {
			t.Errorf("%s: created %v, want %v", want.meta.ID, got.meta.Created, want.meta.Created)
		}
		gn, gz := got.meta.Created.Zone()
		if wn, wz := want.meta.Created.Zone(); gn != wn || gz != wz {
			t.Errorf("%s: zone %s %d, want %s %d", want.meta.ID, gn, gz, wn, wz)
		}
		gm, wm := got.meta, want.meta
		gm.Created, wm.Created = time.Time{}, time.Time{}
		if gm != wm || got.dir != want.dir || got.verified != want.verified || got.missing != want.missing ||
			!reflect.DeepEqual(got.lines, want.lines) || !reflect.DeepEqual(got.store, want.store) {
			t.Errorf("%s:\n got %+v\nwant %+v", want.meta.ID, *got, want)
		}
	}
	for _, en := range ens {
		check(en)
	}
	if got, _ := x.get(ens[0].meta.ID); &got.lines[0] != &oneChunk[0] {
		t.Error("a one-chunk line index is not the shared one")
	}
	if _, ok := x.get("res_00000000000000000000000f"); ok || x.len() != len(ens) {
		t.Errorf("an unknown id found, or %d results", x.len())
	}
	if _, ok := x.get("nonsense"); ok {
		t.Error("an invalid id found")
	}
	if len(x.tabs.stores) != 4 { // own, nil, and other twice: not comparable
		t.Errorf("%d stores in the table", len(x.tabs.stores))
	}
	// A verification changes the stamp and the line index only; strings
	// decoded before stay what they were.
	before, _ := x.get(ens[1].meta.ID)
	x.setVerified(ens[1].meta.ID, "s2", []int64{0, 100})
	want := ens[1]
	want.verified, want.lines = "s2", []int64{0, 100}
	check(want)
	check(ens[0])
	// Verifying the same version again keeps nothing more.
	n0, l0 := len(x.strs), len(x.lines)
	x.setVerified(ens[1].meta.ID, "s2", []int64{0, 100})
	if len(x.strs) != n0 || len(x.lines) != l0 {
		t.Errorf("the same verification grew the index: %d -> %d bytes, %d -> %d links", n0, len(x.strs), l0, len(x.lines))
	}
	check(want)
	if before.verified != "" || before.meta.Tool != ens[1].meta.Tool {
		t.Errorf("a decoded entry changed: %+v", *before)
	}
	// Putting an id again replaces its entry.
	repl := ens[2]
	repl.missing = ""
	x.put(repl)
	check(repl)
	if x.len() != len(ens) {
		t.Errorf("%d results after a replacement", x.len())
	}
	n := 0
	x.each(func(*entry) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("each went on after false: %d", n)
	}
}
