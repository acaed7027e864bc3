package harness

import (
	"fmt"
	"testing"
)

// TestPrefixHasherGivesBackRoom checks that after a long conversation
// and a reset, the hasher keeps no room sized for the long one (the
// collector would scan its message identities at every cycle), and that
// the keys stay those a fresh hasher computes.
func TestPrefixHasherGivesBackRoom(t *testing.T) {
	req := func(n int) *ModelRequest {
		r := &ModelRequest{Model: "m", System: "s"}
		for i := range n {
			r.Messages = append(r.Messages, UserMessage(fmt.Sprintf("message %d", i)))
		}
		return r
	}
	var p prefixHasher
	p.compute(req(1000))
	if cap(p.ids) < 999 {
		t.Fatalf("room for %d messages after 1000", cap(p.ids))
	}
	p.reset()
	short := req(3)
	p.compute(short)
	if cap(p.ids) > 256 || cap(p.chain) > 256 || cap(p.oldIDs) > 256 {
		t.Errorf("room for %d ids, %d links, %d old ids after a conversation of 3", cap(p.ids), cap(p.chain), cap(p.oldIDs))
	}
	var fresh prefixHasher
	want := req(3)
	fresh.compute(want)
	if short.PrefixKey.Key != want.PrefixKey.Key {
		t.Error("the key after the room was given back differs from a fresh hasher's")
	}
	// The chain still serves the next request of the conversation.
	next := &ModelRequest{Model: "m", System: "s", Messages: append(short.Messages, UserMessage("more"))}
	p.compute(next)
	wantNext := &ModelRequest{Model: "m", System: "s", Messages: append(want.Messages, UserMessage("more"))}
	fresh.compute(wantNext)
	if next.PrefixKey.Key != wantNext.PrefixKey.Key || len(next.PrefixKey.Changed) != 0 {
		t.Errorf("next request: key %v want %v, changed %v", next.PrefixKey.Key, wantNext.PrefixKey.Key, next.PrefixKey.Changed)
	}
}
