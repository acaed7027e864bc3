// Command spill shows the result-spilling extension offline: a tool
// exports several megabytes of CSV, which the extension stores, handing the
// model a compact envelope instead; the scripted model then reads the
// stored result with read_result — a search, a slice and a filtered count —
// without the export ever entering its context or running again.
//
// Run it with
//
//	go run ./examples/spill
//
// It prints the envelope the model received and each read_result call with
// its answer. The stored export lives in a temporary directory that is
// removed when the agent closes.
//
// # S3 mode
//
// With HARNESSX_ARTIFACTS set, the export goes to that S3-compatible store
// instead (github.com/harnessx/harnessx/extensions/spill/s3store), where
// other workers can read it after loading the session:
//
//	HARNESSX_ARTIFACTS=s3://my-bucket/agents \
//	AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… AWS_REGION=us-east-1 \
//	AWS_ENDPOINT_URL_S3=http://127.0.0.1:7070 \
//	go run ./examples/spill
//
// It first checks the bucket and the credentials, and stops with the
// reason if they do not work. The result is kept in the bucket unless
// HARNESSX_ARTIFACTS_ON_CLOSE=delete.
package main
