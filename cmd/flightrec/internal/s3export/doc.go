// Package s3export is flightrec's S3 support: it writes an export to an
// s3:// URL and fetches the spilled results an S3 artifact store holds.
// It is the only part of flightrec that imports the S3 client (minio-go,
// through extensions/spill/s3store), and flightrec links it only when
// built with -tags s3, so that a flightrec that is not asked for s3://
// never compiles that client.
package s3export
