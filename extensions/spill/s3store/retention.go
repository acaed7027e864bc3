package s3store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/harnessx/harnessx/extensions/spill"
)

// ExpireStats says what [Store.Expire] deleted.
type ExpireStats struct {
	// Results is the number of result ids deleted, Objects the content
	// objects deleted with them (content shared by several ids goes with
	// the last), Bytes the size of those objects.
	Results, Objects int
	Bytes            int64
	// Remaining is the number of results kept and RemainingBytes the size
	// of their content.
	Remaining      int
	RemainingBytes int64
}

// orphanGrace is how old a content object without any reference must be
// before Expire deletes it: a Put writes the content before its reference.
const orphanGrace = time.Hour

// Expire applies Retention.MaxAge and Retention.MaxBytes to the whole
// prefix, every worker's results included: it deletes the results written
// more than MaxAge ago, then the oldest ones until the content takes at
// most MaxBytes, then content left without any reference for an hour (by
// a Put that failed half-way). With neither limit it deletes nothing but
// such orphans. It lists the prefix (three listings) and deletes object
// by object.
//
// Run it from one place at a time (a periodic job, or Close with
// ExpireOnClose). A Put of content that Expire is deleting at that very
// moment is re-checked after its index is written, which narrows the race
// to a few requests; a result that loses it reads as a clear
// "not found" error.
func (s *Store) Expire(ctx context.Context) (ExpireStats, error) {
	var st ExpireStats
	inv, err := s.inventory(ctx)
	if err != nil {
		return st, s.wrap("expiring", "", err)
	}
	now := time.Now()
	ret := s.cfg.Retention
	refs := map[string]int{}
	var live []*invResult
	for _, r := range inv.results {
		refs[r.sum]++
		live = append(live, r)
	}
	var total int64
	for sum := range refs {
		total += inv.blobs[sum].Size
	}
	var errs []error
	drop := func(r *invResult) {
		if err := s.removeRef(ctx, r); err != nil {
			errs = append(errs, err)
			return
		}
		st.Results++
		refs[r.sum]--
		if refs[r.sum] == 0 {
			delete(refs, r.sum)
			if b, ok := inv.blobs[r.sum]; ok {
				if err := s.core.RemoveObject(ctx, s.cfg.Bucket, b.Key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
					errs = append(errs, err)
					return
				}
				st.Objects++
				st.Bytes += b.Size
				total -= b.Size
			}
		}
	}
	slices.SortFunc(live, func(a, b *invResult) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.id, b.id))
	})
	kept := live[:0]
	for _, r := range live {
		if ret.MaxAge > 0 && now.Sub(r.created) > ret.MaxAge {
			drop(r)
			continue
		}
		kept = append(kept, r)
	}
	for i := 0; ret.MaxBytes > 0 && total > ret.MaxBytes && i < len(kept); i++ {
		drop(kept[i])
		kept[i] = nil
	}
	for sum, b := range inv.blobs {
		if refs[sum] == 0 && now.Sub(b.LastModified) > orphanGrace {
			if err := s.core.RemoveObject(ctx, s.cfg.Bucket, b.Key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
				errs = append(errs, err)
				continue
			}
			st.Objects++
			st.Bytes += b.Size
		}
	}
	for _, r := range kept {
		if r != nil {
			st.Remaining++
		}
	}
	st.RemainingBytes = max(total, 0)
	if err := errors.Join(errs...); err != nil {
		return st, s.wrap("expiring", "", err)
	}
	return st, nil
}

func (s *Store) removeRef(ctx context.Context, r *invResult) error {
	for _, k := range []string{s.idKey(r.id), s.refKey(r.sum, r.id)} {
		if err := s.core.RemoveObject(ctx, s.cfg.Bucket, k, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
			return err
		}
	}
	s.mu.Lock()
	delete(s.index, r.id)
	delete(s.written, r.id)
	s.mu.Unlock()
	return nil
}

// invResult is a result found by listing: its id, content and time.
type invResult struct {
	id      string
	sum     string
	created time.Time // the reference's time, else the index's
	indexed bool      // its index object exists
}

// inventory is what a listing of the prefix found.
type inventory struct {
	results []*invResult                // sorted by id
	blobs   map[string]minio.ObjectInfo // by SHA-256
}

func (s *Store) inventory(ctx context.Context) (*inventory, error) {
	inv := &inventory{blobs: map[string]minio.ObjectInfo{}}
	list := func(prefix string, fn func(rest string, o minio.ObjectInfo)) error {
		p := s.key(prefix) + "/"
		for o := range s.core.Client.ListObjectsIter(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
			if o.Err != nil {
				return o.Err
			}
			fn(strings.TrimPrefix(o.Key, p), o)
		}
		return nil
	}
	byID := map[string]*invResult{}
	if err := list("refs", func(rest string, o minio.ObjectInfo) {
		sum, id, ok := strings.Cut(rest, "/")
		if !ok || !spill.ValidID(id) || len(sum) != 64 {
			return
		}
		byID[id] = &invResult{id: id, sum: sum, created: o.LastModified}
	}); err != nil {
		return nil, err
	}
	if err := list("ids", func(id string, o minio.ObjectInfo) {
		if r := byID[id]; r != nil {
			r.indexed = true
		}
	}); err != nil {
		return nil, err
	}
	if err := list("blobs/sha256", func(sum string, o minio.ObjectInfo) {
		if len(sum) == 64 {
			inv.blobs[sum] = o
		}
	}); err != nil {
		return nil, err
	}
	for _, r := range byID {
		inv.results = append(inv.results, r)
	}
	slices.SortFunc(inv.results, func(a, b *invResult) int { return strings.Compare(a.id, b.id) })
	return inv, nil
}
