//go:build s3

package main

import "github.com/harnessx/harnessx/cmd/flightrec/internal/s3export"

// defaultS3 is the S3 support of a build with -tags s3.
func defaultS3() s3Support { return s3export.Support{} }
