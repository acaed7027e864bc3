package s3store

import (
	"context"
	"net/url"
	"time"

	"github.com/harnessx/harnessx/extensions/spill"
)

var _ spill.URLer = (*Store)(nil)

// MaxURLExpiry is the longest a presigned URL of [Store.URL] works: 7
// days, the limit of AWS Signature Version 4.
const MaxURLExpiry = 7 * 24 * time.Hour

// URL returns a presigned GET URL of the result's content object (the
// blobs/sha256/<hex> object that its index names), which anyone who holds
// it can fetch, without credentials, until it expires: the spill
// extension sends a large media part of a tool result to the model's
// provider by such a URL (spill.WithPartThreshold). expiry is capped at
// [MaxURLExpiry] and raised to a second; with temporary credentials
// (AWS_SESSION_TOKEN) the URL also stops working when they expire, and it
// carries the session token. contentType, when not "", is the
// Content-Type of the answer (the response-content-type parameter);
// otherwise it is the object's, application/octet-stream. The URL names
// the endpoint of [Config].Endpoint: a provider can fetch it only if it
// can reach that endpoint (AWS S3 or a public one, not a private network
// or 127.0.0.1); otherwise keep parts inline with
// spill.WithPartThreshold(-1). Presigning is computed locally once the id
// is resolved (a GET of its index, cached, unless this Store wrote it),
// and the URL stops working when the result is deleted (DeleteOnClose,
// Expire) and no other id refers to its content.
func (s *Store) URL(ctx context.Context, id, contentType string, expiry time.Duration) (string, error) {
	if err := s.check(id); err != nil {
		return "", err
	}
	ie, err := s.resolve(ctx, id)
	if err != nil {
		return "", s.wrap("presigning", id, err)
	}
	expiry = min(max(expiry, time.Second), MaxURLExpiry)
	var params url.Values
	if contentType != "" {
		params = url.Values{"response-content-type": {contentType}}
	}
	u, err := s.core.Client.PresignedGetObject(ctx, s.cfg.Bucket, s.blobKey(ie.SHA256), expiry, params)
	if err != nil {
		return "", s.wrap("presigning", id, err)
	}
	return u.String(), nil
}
