// Command versitygw runs the versitygw S3 gateway (github.com/versity/versitygw,
// Apache-2.0) over a posix backend, for harnessx's tests of the S3 artifact
// store (extensions/spill/s3store). It is a separate module so that the
// gateway and its many dependencies never enter the main module's build;
// .ci/versitygw.sh builds it once into a cache.
//
//	versitygw -addr 127.0.0.1:7070 -root DIR -meta DIR -access KEY -secret SECRET
//
// The access key and secret may come from VGW_ACCESS_KEY and VGW_SECRET_KEY
// instead of flags, so that they do not show in the process list. It
// prints "ready" on standard output once the port accepts connections, and
// runs until interrupted (SIGINT or SIGTERM).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "versitygw:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:7070", "S3 API listening address (host:port)")
	root := flag.String("root", "", "directory holding the buckets (required)")
	metaDir := flag.String("meta", "", "sidecar metadata directory, outside -root (required)")
	access := flag.String("access", os.Getenv("VGW_ACCESS_KEY"), "root access key (default $VGW_ACCESS_KEY)")
	secret := flag.String("secret", os.Getenv("VGW_SECRET_KEY"), "root secret key (default $VGW_SECRET_KEY)")
	region := flag.String("region", "us-east-1", "region reported to clients")
	maxConns := flag.Int("max-connections", 256, "maximum concurrent TCP connections")
	maxReqs := flag.Int("max-requests", 256, "maximum concurrent requests")
	maxParts := flag.Int("mp-max-parts", 10000, "maximum parts of a multipart upload")
	quiet := flag.Bool("quiet", true, "no per-request log")
	flag.Parse()
	if *root == "" || *metaDir == "" {
		return fmt.Errorf("-root and -meta are required")
	}
	if *access == "" || *secret == "" {
		return fmt.Errorf("an access key and a secret are required (-access/-secret or VGW_ACCESS_KEY/VGW_SECRET_KEY)")
	}
	for _, d := range []string{*root, *metaDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	sc, err := meta.NewSideCar(*metaDir)
	if err != nil {
		return fmt.Errorf("sidecar metadata: %w", err)
	}
	opts := posix.PosixOpts{SideCarDir: *metaDir, Concurrency: 64}
	// posix.New changes the working directory to root: one more reason the
	// gateway runs in its own process.
	be, err := posix.New(*root, sc, opts)
	if err != nil {
		return fmt.Errorf("posix backend: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := &embedgw.Config{
		RootUserAccess:    *access,
		RootUserSecret:    *secret,
		Region:            *region,
		Ports:             []string{*addr},
		MaxConnections:    *maxConns,
		MaxRequests:       *maxReqs,
		MultipartMaxParts: *maxParts,
		KeepAlive:         true,
		Quiet:             *quiet,
	}
	errc := make(chan error, 1)
	go func() { errc <- embedgw.RunVersityGW(ctx, be, cfg) }()
	for {
		select {
		case err := <-errc:
			return fmt.Errorf("gateway stopped: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
		c, err := net.DialTimeout("tcp", *addr, time.Second)
		if err == nil {
			c.Close()
			fmt.Println("ready")
			break
		}
	}
	err = <-errc
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
