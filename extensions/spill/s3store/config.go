package s3store

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by [ConfigFromEnv] and [FromEnv].
const (
	// EnvArtifacts is the store's location, s3://bucket or s3://bucket/prefix.
	EnvArtifacts = "HARNESSX_ARTIFACTS"
	// EnvOnClose is "keep" (the default) or "delete": what Close does with
	// the results this Store wrote (Retention.DeleteOnClose).
	EnvOnClose = "HARNESSX_ARTIFACTS_ON_CLOSE"
	// EnvMaxAge is a Go duration such as "72h" (Retention.MaxAge).
	EnvMaxAge = "HARNESSX_ARTIFACTS_MAX_AGE"
	// EnvMaxBytes is a byte count, optionally with a KiB, MiB, GiB or TiB
	// suffix (Retention.MaxBytes).
	EnvMaxBytes = "HARNESSX_ARTIFACTS_MAX_BYTES"
)

// Defaults of [Config].
const (
	// DefaultRegion is used when Config.Region (and AWS_REGION) is empty.
	DefaultRegion = "us-east-1"
	// DefaultMaxReadAhead is the largest ranged GET a File makes.
	DefaultMaxReadAhead = 8 << 20
	// DefaultMinReadAhead is the first ranged GET after an Open or a Seek.
	DefaultMinReadAhead = 64 << 10
	// DefaultMaxRetries is the number of attempts of one request.
	DefaultMaxRetries = 3
	// DefaultSpoolMemory is how much of a result Put keeps in memory
	// before it spools the rest to a temporary file.
	DefaultSpoolMemory = 8 << 20
)

// Config configures a [Store]. Its zero value is not usable: Bucket is
// required. Every other field has a default, listed with it.
type Config struct {
	// Endpoint is the S3 API endpoint: a URL (http:// for plain HTTP,
	// https:// for TLS) or host:port (TLS). Default: AWS S3
	// (https://s3.amazonaws.com). It must not hold credentials.
	Endpoint string
	// Bucket holds everything the store writes. Required.
	Bucket string
	// Prefix is prepended to every key, without leading or trailing
	// slashes ("team/agents"); default none.
	Prefix string
	// Region is the bucket's region; default DefaultRegion.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken are the credentials
	// (static, signature V4). Empty AccessKeyID means anonymous requests.
	// They are sent only in request signatures: no error, log record or
	// String of the store includes them.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string

	// Retention says what is deleted and when; the zero value keeps
	// everything.
	Retention Retention

	// MinReadAhead and MaxReadAhead bound the ranged GETs of a File: the
	// first read after an Open or a Seek asks for MinReadAhead bytes, each
	// sequential one for eight times the previous, up to MaxReadAhead.
	// Defaults DefaultMinReadAhead (64 KiB) and DefaultMaxReadAhead
	// (8 MiB). A scan from the start (within 1 MiB of it) whose window
	// reaches 4 MiB reads the rest in one GET of the whole object.
	MinReadAhead, MaxReadAhead int64
	// SpoolMemory is how much of a result Put holds in memory while it
	// computes the SHA-256 that names it; beyond it the result is spooled
	// to a temporary file in SpoolDir (default os.TempDir()), removed when
	// Put returns. Default DefaultSpoolMemory (8 MiB).
	SpoolMemory int64
	SpoolDir    string
	// MaxRetries is the number of attempts of a request that failed in a
	// way worth retrying; default DefaultMaxRetries (3), so an unreachable
	// store fails within seconds.
	MaxRetries int
	// DialTimeout bounds connecting to the endpoint; default 5s.
	DialTimeout time.Duration
	// Transport, if set, carries the requests instead of a transport
	// built from minio-go's default (tests count bytes with it).
	Transport http.RoundTripper
	// Logger receives warnings (a failed deletion at Close); default
	// slog.Default().
	Logger *slog.Logger
}

// Retention says which stored results are deleted, and when. Nothing is
// deleted unless asked for here.
type Retention struct {
	// DeleteOnClose deletes, at [Store.Close], the results this Store
	// wrote: the session ends with them. Leave it false when another
	// worker may load the session (it reads them after this one closed).
	DeleteOnClose bool
	// MaxAge makes [Store.Expire] delete results older than this; 0 keeps
	// them whatever their age.
	MaxAge time.Duration
	// MaxBytes makes [Store.Expire] delete the oldest results until the
	// stored content takes at most this many bytes; 0 means no limit.
	MaxBytes int64
	// ExpireOnClose runs Expire at Close (after DeleteOnClose).
	ExpireOnClose bool
}

// String describes the configuration without its credentials.
func (c Config) String() string {
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "AWS S3"
	}
	return fmt.Sprintf("%s (endpoint %s, region %s, access key %s)", Location(c.Bucket, c.Prefix), endpoint, orDefault(c.Region, DefaultRegion), maskKey(c.AccessKeyID))
}

// LogValue logs the configuration without its credentials.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("location", Location(c.Bucket, c.Prefix)),
		slog.String("endpoint", c.Endpoint),
		slog.String("region", orDefault(c.Region, DefaultRegion)),
		slog.String("access_key", maskKey(c.AccessKeyID)),
	)
}

// maskKey keeps the first four characters of an access key id, which
// identify it to its owner, and hides the rest.
func maskKey(k string) string {
	switch {
	case k == "":
		return "(anonymous)"
	case len(k) <= 8:
		return "****"
	}
	return k[:4] + "****"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Location returns s3://bucket/prefix.
func Location(bucket, prefix string) string {
	if prefix == "" {
		return "s3://" + bucket
	}
	return "s3://" + bucket + "/" + prefix
}

// ErrNotConfigured is returned by [FromEnv] when HARNESSX_ARTIFACTS is
// not set.
var ErrNotConfigured = errors.New("s3store: " + EnvArtifacts + " is not set")

// ParseURL splits s3://bucket/prefix into its bucket and prefix (without
// leading or trailing slashes). It rejects other schemes, credentials in
// the URL, queries and fragments.
func ParseURL(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" {
		return "", "", fmt.Errorf("s3store: %q is not an s3://bucket/prefix URL", redactURL(s))
	}
	if u.User != nil {
		return "", "", errors.New("s3store: an s3:// URL must not hold credentials; use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", fmt.Errorf("s3store: %q: an s3:// URL has no query or fragment", redactURL(s))
	}
	if u.Host == "" {
		return "", "", fmt.Errorf("s3store: %q names no bucket", s)
	}
	prefix = strings.Trim(u.Path, "/")
	if strings.Contains(prefix, "//") {
		return "", "", fmt.Errorf("s3store: %q: empty path segment", s)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "." || seg == ".." {
			return "", "", fmt.Errorf("s3store: %q: no . or .. segments", s)
		}
	}
	return u.Host, prefix, nil
}

// redactURL drops the user information of a URL-like string for an
// error message.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	if i := strings.Index(s, "@"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

// ConfigFromEnv builds a Config from the environment, read with getenv
// (os.Getenv in programs; a map in tests):
//
//	HARNESSX_ARTIFACTS             s3://bucket/prefix (required)
//	AWS_ACCESS_KEY_ID              access key (none: anonymous)
//	AWS_SECRET_ACCESS_KEY          secret key
//	AWS_SESSION_TOKEN              session token, for temporary credentials
//	AWS_REGION                     region, else AWS_DEFAULT_REGION, else us-east-1
//	AWS_ENDPOINT_URL_S3            endpoint URL, else AWS_ENDPOINT_URL, else AWS S3
//	HARNESSX_ARTIFACTS_ON_CLOSE    keep (default) or delete
//	HARNESSX_ARTIFACTS_MAX_AGE     e.g. 72h: Expire deletes older results
//	HARNESSX_ARTIFACTS_MAX_BYTES   e.g. 10GiB: Expire keeps at most this much
//
// When MAX_AGE or MAX_BYTES is set, Close also runs Expire
// (Retention.ExpireOnClose). It fails with [ErrNotConfigured] when
// HARNESSX_ARTIFACTS is empty.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	loc := getenv(EnvArtifacts)
	if loc == "" {
		return Config{}, ErrNotConfigured
	}
	c, err := ConfigForURL(loc, getenv)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvArtifacts, err)
	}
	return c, nil
}

// ConfigForURL is ConfigFromEnv for the location s3://bucket/prefix given
// instead of HARNESSX_ARTIFACTS (flightrec export -o s3://… uses it).
func ConfigForURL(location string, getenv func(string) string) (Config, error) {
	bucket, prefix, err := ParseURL(location)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Bucket:          bucket,
		Prefix:          prefix,
		AccessKeyID:     getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    getenv("AWS_SESSION_TOKEN"),
		Region:          orDefault(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
		Endpoint:        orDefault(getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL")),
	}
	if c.AccessKeyID != "" && c.SecretAccessKey == "" {
		return Config{}, errors.New("s3store: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
	}
	switch v := strings.ToLower(getenv(EnvOnClose)); v {
	case "", "keep":
	case "delete":
		c.Retention.DeleteOnClose = true
	default:
		return Config{}, fmt.Errorf("s3store: %s=%q: want keep or delete", EnvOnClose, v)
	}
	if v := getenv(EnvMaxAge); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("s3store: %s=%q: want a positive duration such as 72h", EnvMaxAge, v)
		}
		c.Retention.MaxAge = d
		c.Retention.ExpireOnClose = true
	}
	if v := getenv(EnvMaxBytes); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return Config{}, fmt.Errorf("s3store: %s=%q: %v", EnvMaxBytes, v, err)
		}
		c.Retention.MaxBytes = n
		c.Retention.ExpireOnClose = true
	}
	return c, nil
}

// parseBytes parses a positive byte count with an optional binary suffix.
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.New("want a positive byte count such as 10GiB")
	}
	return n * mult, nil
}

// endpointHost turns Endpoint into minio-go's host and TLS switch.
func endpointHost(endpoint string) (host string, secure bool, err error) {
	if endpoint == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(endpoint, "://") {
		return endpoint, true, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		// The parser's message quotes the whole URL, credentials included.
		return "", false, fmt.Errorf("s3store: endpoint %q is not a valid URL", redactURL(endpoint))
	}
	if u.User != nil {
		return "", false, errors.New("s3store: the endpoint URL must not hold credentials")
	}
	if u.Path != "" && u.Path != "/" {
		return "", false, fmt.Errorf("s3store: endpoint %q: a path is not supported", endpoint)
	}
	switch u.Scheme {
	case "http":
		return u.Host, false, nil
	case "https":
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("s3store: endpoint %q: want http:// or https://", endpoint)
}
