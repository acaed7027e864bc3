package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/redact"
)

// claimParts replaces each media part of r whose inline bytes exceed the
// part threshold by a part of the same type, MIME type and name whose
// bytes are in the store, referred to by URL: a claim check, so the bytes
// are not sent in every model request. It does so only when the caller's
// store is a [URLer] (a URL the provider can fetch) and the agent's
// provider takes the part by URL (harness.Agent.AcceptsURL); otherwise
// the part stays inline, sent as it is. A part that cannot be stored, or
// whose URL cannot be made, stays inline too: the failure is logged and
// counted (Stats.PartStoreFailures), and the part is never lost. The
// parts slice is replaced, not changed in place: the tool's parts and
// their Media are left as they were.
func (e *Extension) claimParts(ctx context.Context, call *harness.ToolCall, r *harness.ToolResult) {
	if e.cfg.partMin < 0 {
		return
	}
	u, ok := e.cfg.store.(URLer)
	if !ok {
		return
	}
	e.mu.Lock()
	agent := e.agent
	e.mu.Unlock()
	if agent == nil {
		return
	}
	var parts []harness.Part
	for i := range r.Parts {
		p := &r.Parts[i]
		md := p.Media
		if !p.IsMedia() || md == nil || len(md.Data) <= e.cfg.partMin || !agent.AcceptsURL(p.Type, md.MIME) {
			continue
		}
		url, err := e.storePart(ctx, u, md)
		if err != nil {
			cause := redact.Builtin().String(err.Error())
			e.stats.partFailures.Add(1)
			e.log().Warn("spill: could not store a large part of a tool result; it is sent inline",
				"tool", call.Name, "call_id", call.ID, "part", i, "type", string(p.Type), "mime", md.MIME, "size", len(md.Data), "err", cause)
			continue
		}
		if parts == nil {
			parts = slices.Clone(r.Parts)
		}
		np := *p
		np.Media = &harness.Media{MIME: md.MIME, Name: md.Name, URI: url}
		parts[i] = np
		e.stats.partsStored.Add(1)
		e.stats.partBytes.Add(int64(len(md.Data)))
	}
	if parts != nil {
		r.Parts = parts
	}
}

// storePart stores a part's bytes under a fresh id and returns a URL of
// them that works for the configured expiry.
func (e *Extension) storePart(ctx context.Context, u URLer, md *harness.Media) (string, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	var id string
	var err error
	var n int64
	for attempt := 0; ; attempt++ {
		id = newID()
		n, err = u.Put(ctx, id, bytes.NewReader(md.Data))
		if err == nil || attempt == 2 || !errors.Is(err, ErrExists) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if n != int64(len(md.Data)) {
		_ = u.Delete(ctx, id)
		return "", fmt.Errorf("spill: store kept %d of %d bytes of %s", n, len(md.Data), id)
	}
	url, err := u.URL(ctx, id, md.MIME, e.cfg.partExpiry)
	if err != nil {
		_ = u.Delete(ctx, id)
		return "", err
	}
	return url, nil
}
