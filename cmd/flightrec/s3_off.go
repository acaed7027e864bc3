//go:build !s3

package main

// defaultS3 is nil in the default build: s3:// outputs and artifacts
// say how to get a build with S3 support (noS3).
func defaultS3() s3Support { return nil }
