package clientopt

import (
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"testing"
)

// sdk records the options as strings.
var sdk = SDK[string]{
	WithAPIKey:     func(k string) string { return "key=" + k },
	WithBaseURL:    func(u string) string { return "url=" + u },
	WithHTTPClient: func(hc *http.Client) string { return fmt.Sprintf("client=%v", hc != nil) },
	WithMaxRetries: func(n int) string { return fmt.Sprintf("retries=%d", n) },
}

func TestClientOptions(t *testing.T) {
	key, retries := "k", 0
	c := Common[string]{APIKey: &key, BaseURL: "http://x/", MaxRetries: &retries, HTTPClient: &http.Client{}, ReqOpts: []string{"raw"}}
	got, err := c.ClientOptions("p", sdk, "first")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"first", "key=k", "url=http://x/", "client=true", "retries=0", "raw"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options %q, want %q", got, want)
	}
	if c.Logger != slog.Default() {
		t.Error("logger not defaulted")
	}

	var empty Common[string]
	if got, err := empty.ClientOptions("p", sdk); err != nil || len(got) != 0 {
		t.Errorf("zero settings gave %q, %v", got, err)
	}
	bad := Common[string]{BaseURL: "http://[::1"}
	if _, err := bad.ClientOptions("p", sdk); err == nil {
		t.Error("bad base URL accepted")
	}
}

func TestCheckRetries(t *testing.T) {
	for n, ok := range map[int]bool{-1: false, 0: true, 3: true} {
		c := Common[string]{MaxRetries: &n}
		if err := c.CheckRetries("p"); (err == nil) != ok {
			t.Errorf("CheckRetries(%d) = %v", n, err)
		}
	}
	if err := (&Common[string]{}).CheckRetries("p"); err != nil {
		t.Errorf("unset retries: %v", err)
	}
}
