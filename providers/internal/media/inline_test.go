package media

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEncoderReader(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 100, 4097, 70001} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*13 + 5)
		}
		want := base64.StdEncoding.EncodeToString(data)
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"plain": func(r io.Reader) io.Reader { return r },
			"one":   iotest.OneByteReader,
			"half":  iotest.HalfReader,
		} {
			got, err := io.ReadAll(wrap(&encoder{src: data}))
			if err != nil || string(got) != want {
				t.Errorf("%d bytes, %s reads: %v, got %d bytes, want %d", n, name, err, len(got), len(want))
			}
		}
		if err := iotest.TestReader(&encoder{src: data}, []byte(want)); err != nil {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func TestInliner(t *testing.T) {
	small := []byte("tiny")
	big := bytes.Repeat([]byte{1, 2, 3, 250}, StreamThreshold/4+1)
	pdf := bytes.Repeat([]byte("%PDF"), StreamThreshold/4+7)
	var in Inliner
	if got := in.Base64(small); got != base64.StdEncoding.EncodeToString(small) || in.Streams() {
		t.Fatalf("small data: %q", got)
	}
	t1, t2 := in.Base64(big), in.DataURL("application/pdf", pdf)
	if !in.Streams() || len(t1) > 64 || t1 == t2 {
		t.Fatalf("tokens %q %q", t1, t2)
	}
	// The tokens in the body out of order, as a marshaller may put them.
	body := `{"a":"` + t2 + `","b":[{"data":"` + t1 + `"}],"c":"tiny"}`
	want := `{"a":"data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(pdf) + `","b":[{"data":"` +
		base64.StdEncoding.EncodeToString(big) + `"}],"c":"tiny"}`
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/x", strings.NewReader(body))
	var sent []byte
	var length int64
	_, err := in.Middleware(req, func(r *http.Request) (*http.Response, error) {
		var err error
		if sent, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		again, _ := r.GetBody()
		b2, _ := io.ReadAll(again)
		if !bytes.Equal(b2, sent) {
			return nil, errors.New("GetBody gives another body")
		}
		length = r.ContentLength
		return &http.Response{StatusCode: 200}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(sent) != want || length != int64(len(want)) {
		t.Errorf("sent %d bytes (Content-Length %d), want %d; equal %v", len(sent), length, len(want), string(sent) == want)
	}
	// A token missing from the body: nothing is sent.
	req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1/x", strings.NewReader(`{"a":"`+t1+`"}`))
	if _, err := in.Middleware(req, func(*http.Request) (*http.Response, error) {
		t.Error("sent")
		return nil, nil
	}); err == nil {
		t.Error("a missing token was not an error")
	}
}
