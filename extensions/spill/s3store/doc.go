// Package s3store is a spill.Store on S3-compatible storage (AWS S3,
// MinIO, versitygw, …) built on the official minio-go client, so that
// workers on several machines share spilled results: one worker spills a
// result, another loads the session (harness.LoadSession) and answers
// read_result for it by id. It is a separate package so that programs
// that keep results on local disk never compile the S3 client.
//
//	store, err := s3store.FromEnv() // HARNESSX_ARTIFACTS=s3://bucket/prefix, AWS_* credentials
//	if err != nil { … }
//	defer store.Close(ctx)          // applies the retention (below)
//	agent, err := harness.New(…, harness.WithExtensions(spill.New(spill.WithStore(store))))
//
// # Configuration
//
// [FromEnv] reads the usual variables ([ConfigFromEnv] lists them):
//
//	HARNESSX_ARTIFACTS=s3://bucket/prefix     where results go (required)
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  credentials (AWS_SESSION_TOKEN for temporary ones)
//	AWS_REGION                                default us-east-1
//	AWS_ENDPOINT_URL_S3                       e.g. http://127.0.0.1:7070; default AWS S3
//	HARNESSX_ARTIFACTS_ON_CLOSE=keep|delete   default keep
//	HARNESSX_ARTIFACTS_MAX_AGE=72h            expire results older than this
//	HARNESSX_ARTIFACTS_MAX_BYTES=10GiB        expire the oldest beyond this
//
// [New] takes the same as a [Config] struct, whose zero fields mean the
// defaults listed on each field. Credentials travel only in request
// signatures: the store's errors, its String and LogValue, and so the
// spans, logs and incident bundles of an agent, never hold them.
//
// # Layout: ids and content
//
// The spill extension names a result by a random id (res_…) before it has
// read it, and the Store interface takes ids; the store keys content by
// its SHA-256. Under the prefix, each result is three objects:
//
//	blobs/sha256/<hex>   the content, written once (If-None-Match: *)
//	refs/<hex>/<id>      an empty reference from the id to the content
//	ids/<id>             the index: {"sha256": "<hex>", "size": n}, written once
//
// Put reads the result while hashing it (in memory up to
// Config.SpoolMemory, 8 MiB, then in a temporary file), then writes the
// content unless an object of that hash is there already; the PUT carries
// If-None-Match: *, and a 412 answer (another writer stored the same
// bytes first) counts as success. A replayed or retried tool step, or the
// same output of two workers, therefore stores its content once, whatever
// the ids. The index is written last, with If-None-Match: * too, so a
// result is visible only once complete, and an id is never rebound (Put
// fails with spill.ErrExists). Ids are resolved once and cached: an index
// never changes. The references let Delete and Expire remove content only
// when no id refers to it.
//
// # Reads
//
// Open returns a File over the content object that reads with ranged GETs
// and never downloads the whole object to serve a slice: the first GET
// after an Open or a Seek asks for Config.MinReadAhead (64 KiB), each
// sequential one for eight times the previous, up to Config.MaxReadAhead
// (8 MiB). A scan from the start (a search, a SHA-256 verification) turns
// into one GET of the whole object once its window reaches 4 MiB,
// discarding the at most 1 MiB already read: one request instead of
// many, and servers serve whole objects fastest (versitygw with
// sendfile). Bytes go straight from the response into the reader's buffer,
// so a search, which streams the object in 1 MiB chunks as on disk, holds
// the same memory as on disk; a reader that stops early closes the
// response. Every GET carries If-Match with the ETag seen at Open, so
// content replaced meanwhile fails the read.
//
// The spill extension checks each result's SHA-256 on read: a File's
// stamp is the content object's ETag, time and size, so the result is
// hashed again (downloaded once, streaming) at the first read after a
// session load and whenever the object changed, and a tampered object is
// reported as spill.CorruptError. A result whose objects were deleted
// reads as "its stored file is gone".
//
// # URLs of stored parts
//
// The Store is a spill.URLer: [Store.URL] presigns a GET of a result's
// content object, valid for the expiry asked (at most [MaxURLExpiry], 7
// days), answering with the Content-Type asked. The spill extension uses
// it to send a large image or PDF of a tool result to the model's
// provider by URL instead of inline (spill.WithPartThreshold, default 256
// KiB; spill.WithPartURLExpiry, default 24 hours), when the provider takes
// it by URL. The URL names Config.Endpoint, so the provider must be able
// to reach it (AWS S3 or a public endpoint, not a private network); turn
// the claim check off with spill.WithPartThreshold(-1) otherwise. A URL
// works without credentials until it expires, or until its content is
// deleted (DeleteOnClose, Expire): a session that will be loaded again
// needs the content kept.
//
// # Faults
//
// New does not contact the server; [Store.Check] tests the bucket and the
// credentials. Errors say which operation failed on which id, bucket and
// endpoint, and match [ErrNoBucket], [ErrAccessDenied], [ErrUnreachable]
// or fs.ErrNotExist. A request is tried Config.MaxRetries times (3), and
// connecting is bounded by Config.DialTimeout (5s), so when the store is
// unreachable a spill fails within seconds: the extension then cuts the
// tool result to its threshold, with a note naming the cause, logs a
// warning and counts it in its Stats (StoreFailures), as it does when its
// directory fails.
//
// # Retention
//
// Nothing is deleted unless configured ([Retention]). The spill extension
// never deletes from a caller's store; the store's own Close does what
// the configuration says: with DeleteOnClose (HARNESSX_ARTIFACTS_ON_CLOSE=delete)
// it deletes the results this Store wrote, so the session's results end
// with it; leave it off (keep) when another worker will load the session.
// [Store.Expire] deletes, across the whole prefix and every worker, the
// results older than MaxAge and then the oldest until the content takes at
// most MaxBytes; with ExpireOnClose (set by either variable) Close runs it.
//
// # Incident bundles
//
// [Store.WriteObject] writes an object once under the prefix; flightrec
// export -o s3://bucket/prefix/name.tar.gz writes bundles with it, and
// with --include-artifacts fetches the spilled results that the bundle's
// session refers to from the store named by HARNESSX_ARTIFACTS.
package s3store
