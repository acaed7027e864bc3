package tracing_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/pricing"
)

// The media of the tests. The image bytes hold a secret of their own:
// bytes are never text for the rules, so they must simply never be
// recorded by default.
var (
	userPNG   = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR user photo; stray key sk-ant-api03-imageBytesSecret000000")
	reportPDF = []byte("%PDF-1.7\n1 0 obj << /Title (quarterly report) >> endobj\n%%EOF")
	shotPNG   = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR the screenshot a tool took")
	dataPNG   = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR sent as a data URI")
)

// secretQuery is planted in an image URL's query string.
const secretQuery = "PlantedQuerySecret0123"

var (
	imageURL   = "https://images.example.com/cat.jpg?size=large&api_key=" + secretQuery
	dataURL    = "data:image/png;base64," + base64.StdEncoding.EncodeToString(dataPNG)
	inlineData = [][]byte{userPNG, reportPDF, shotPNG, dataPNG}
)

type shotIn struct {
	Page string `json:"page"`
}

// screenshotTool returns its text and an image, with a text part after it.
func screenshotTool() *harness.Tool {
	return harness.MustTool(harness.NewTool("screenshot", "Screenshot of a page.",
		func(_ context.Context, in shotIn) (harness.ToolOutput, error) {
			return harness.ToolOutput{Text: "screenshot of " + in.Page,
				Parts: []harness.Part{harness.ImagePart(shotPNG, "image/png"), harness.Text("below the fold")}}, nil
		}))
}

// mediaMessage is a user message with text, inline bytes, a URL with a
// secret in its query, a data: URL, a file ID and a named PDF.
func mediaMessage() harness.Message {
	return harness.UserParts(
		harness.Text("What is on these?"),
		harness.ImagePart(userPNG, "image/png"),
		harness.ImageURL(imageURL),
		harness.ImageURL(dataURL),
		harness.FilePart("file-abc123", "application/pdf"),
		harness.DocumentPart(reportPDF, "application/pdf").Named("report.pdf"),
	)
}

// runMedia runs mediaMessage through an agent that calls the screenshot
// tool, then answers; it returns the spans.
func runMedia(t *testing.T, opts ...tracing.Option) ([]sdktrace.ReadOnlySpan, *tracing.Extension) {
	t.Helper()
	tp, sr := recorderTP(t)
	ext := tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, opts...)...)
	a := newAgentExt(t, ext, []harnesstest.Response{
		harnesstest.CallTool("call_1", "screenshot", `{"page":"home"}`),
		{Text: "A cat, a report and the home page.", Usage: harness.Usage{InputTokens: 900, OutputTokens: 12}},
	}, harness.WithTools(screenshotTool()))
	if _, err := a.RunMessage(context.Background(), mediaMessage()); err != nil {
		t.Fatal(err)
	}
	return spans(sr), ext
}

// allText is every attribute and event attribute of all, and the status
// descriptions, as text.
func allText(all []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, s := range all {
		b.WriteString(s.Name() + "\n" + s.Status().Description + "\n")
		for _, kv := range s.Attributes() {
			b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "\n")
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "\n")
			}
		}
	}
	return b.String()
}

// checkNoBytes fails when got holds the base64 of any of data (its first
// 16 characters) or the bytes as they are (a printable run of them).
func checkNoBytes(t *testing.T, got string, data ...[]byte) {
	t.Helper()
	for _, d := range data {
		b64 := base64.StdEncoding.EncodeToString(d)
		if strings.Contains(got, b64[:16]) {
			t.Errorf("a span holds the base64 of %q", d)
		}
		if strings.Contains(got, string(d[16:min(len(d), 34)])) {
			t.Errorf("a span holds the bytes %q", d)
		}
	}
}

type jsonPart = map[string]any

type jsonMessage struct {
	Role  string     `json:"role"`
	Parts []jsonPart `json:"parts"`
}

func decodeMessages(t *testing.T, s string) []jsonMessage {
	t.Helper()
	var msgs []jsonMessage
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return msgs
}

func ref(data []byte) string {
	sum := sha256.Sum256(data)
	return "artifact:sha256:" + hex.EncodeToString(sum[:])
}

func hexSum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// checkRefPart checks a uri part that refers to data.
func checkRefPart(t *testing.T, where string, p jsonPart, modality, mime string, data []byte) {
	t.Helper()
	if p["type"] != "uri" || p["modality"] != modality || p["mime_type"] != mime || p["uri"] != ref(data) ||
		p["size"] != float64(len(data)) || p["sha256"] != hexSum(data) {
		t.Errorf("%s: %v, want a uri part (%s, %s) with the reference, size %d and SHA-256 of the bytes", where, p, modality, mime, len(data))
	}
	if _, ok := p["content"]; ok {
		t.Errorf("%s: a reference part has content: %v", where, p)
	}
}

// TestMediaPartsByReference: by default an inline part is a uri part with
// its artifact reference, size and SHA-256; a URL part keeps its URL,
// redacted; a file part its ID; a data: URL is inline bytes, recorded by
// reference; a tool's image is in its result parts on the execute_tool
// span and in the tool message of the next request. The spans are also
// compared with testdata/spans_media.golden.
func TestMediaPartsByReference(t *testing.T) {
	all, ext := runMedia(t)
	checkGolden(t, "spans_media.golden", render(all))

	chats := byName(all, "chat m")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans", len(chats))
	}
	user := decodeMessages(t, str(chats[0], semconv.GenAIInputMessagesKey))[0].Parts
	if len(user) != 6 {
		t.Fatalf("user parts %v", user)
	}
	if user[0]["type"] != "text" || user[0]["content"] != "What is on these?" {
		t.Errorf("text part %v", user[0])
	}
	checkRefPart(t, "inline image", user[1], "image", "image/png", userPNG)
	if p := user[2]; p["type"] != "uri" || p["modality"] != "image" || p["mime_type"] != nil ||
		p["uri"] != "https://images.example.com/cat.jpg?size=large&api_key=[REDACTED:secret-assignment]" {
		t.Errorf("URL part %v, want the URL with its secret redacted", p)
	}
	checkRefPart(t, "data: URL", user[3], "image", "image/png", dataPNG)
	if p := user[4]; p["type"] != "file" || p["modality"] != "document" || p["mime_type"] != "application/pdf" || p["file_id"] != "file-abc123" {
		t.Errorf("file part %v", p)
	}
	checkRefPart(t, "named PDF", user[5], "document", "application/pdf", reportPDF)
	run := byName(all, "invoke_agent weatherbot")[0]
	if in := decodeMessages(t, str(run, semconv.GenAIInputMessagesKey))[0].Parts; len(in) != 6 {
		t.Errorf("agent span input parts %v, want the user message's 6", in)
	} else {
		checkRefPart(t, "agent span image", in[1], "image", "image/png", userPNG)
	}
	if user[5]["name"] != "report.pdf" {
		t.Errorf("named PDF %v, want its name", user[5])
	}

	// The tool's image, on its span and in the next request.
	tool := byName(all, "execute_tool screenshot")[0]
	if got := str(tool, semconv.GenAIToolCallResultKey); got != "screenshot of home" {
		t.Errorf("tool result %q", got)
	}
	var rparts []jsonPart
	if err := json.Unmarshal([]byte(str(tool, tracing.KeyToolCallResultParts)), &rparts); err != nil {
		t.Fatal(err)
	}
	if len(rparts) != 2 || rparts[1]["type"] != "text" || rparts[1]["content"] != "below the fold" {
		t.Fatalf("result parts %v", rparts)
	}
	checkRefPart(t, "tool span image", rparts[0], "image", "image/png", shotPNG)
	msgs := decodeMessages(t, str(chats[1], semconv.GenAIInputMessagesKey))
	resp := msgs[len(msgs)-1].Parts[0]
	if resp["type"] != "tool_call_response" || resp["response"] != "screenshot of home" {
		t.Fatalf("tool message part %v", resp)
	}
	inner, _ := resp["parts"].([]any)
	if len(inner) != 2 {
		t.Fatalf("tool message parts %v", resp["parts"])
	}
	checkRefPart(t, "tool message image", inner[0].(jsonPart), "image", "image/png", shotPNG)

	got := allText(all)
	checkNoBytes(t, got, inlineData...)
	if strings.Contains(got, secretQuery) {
		t.Error("a span holds the URL's secret")
	}
	if s := ext.Stats(); s.Truncated != 0 || s.UploadErrors != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestMediaNoBytesAnywhere scans every attribute of every span, in each
// configuration that records content without bytes, for the bytes of the
// parts (as base64 or as they are) and for the planted secret: the
// LangSmith copies included.
func TestMediaNoBytesAnywhere(t *testing.T) {
	configs := map[string][]tracing.Option{
		"default":                      nil,
		"langsmith prompt keys":        {tracing.WithLangSmithPromptKeys(true)},
		"bytes, langsmith prompt keys": {tracing.WithLangSmithPromptKeys(true), tracing.WithCaptureMediaBytes(true), tracing.WithMaxMediaBytes(1)},
		"no builtin redaction":         {tracing.WithBuiltinRedaction(false)},
	}
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) {
			all, _ := runMedia(t, opts...)
			got := allText(all)
			checkNoBytes(t, got, inlineData...)
			if !strings.Contains(got, ref(userPNG)) {
				t.Error("the spans hold no reference to the image")
			}
			if name != "no builtin redaction" && strings.Contains(got, secretQuery) {
				t.Error("a span holds the URL's secret")
			}
		})
	}
}

// TestMediaNothingWithoutCapture: with content capture off no part is
// recorded at all, as no text is: no messages, no result parts, no
// reference, URL or file ID.
func TestMediaNothingWithoutCapture(t *testing.T) {
	for _, opts := range [][]tracing.Option{
		{tracing.WithCaptureContent(false)},
		{tracing.WithCaptureContent(false), tracing.WithCaptureMediaBytes(true), tracing.WithLangSmithPromptKeys(true)},
	} {
		var called atomic.Bool
		opts = append(opts, tracing.WithPartUploader(func(context.Context, harness.Part) (string, error) {
			called.Store(true)
			return "https://store.example/x", nil
		}))
		all, _ := runMedia(t, opts...)
		for _, s := range all {
			for _, k := range []string{string(semconv.GenAIInputMessagesKey), string(semconv.GenAIOutputMessagesKey),
				string(tracing.KeyToolCallResultParts), string(tracing.KeyPrompt), string(tracing.KeyCompletion)} {
				if _, ok := attr(s, attrKey(k)); ok {
					t.Errorf("%s has %s with content capture off", s.Name(), k)
				}
			}
		}
		got := allText(all)
		checkNoBytes(t, got, inlineData...)
		for _, s := range []string{"artifact:", "file-abc123", "images.example.com", "report.pdf", "store.example"} {
			if strings.Contains(got, s) {
				t.Errorf("a span holds %q with content capture off", s)
			}
		}
		if called.Load() {
			t.Error("the uploader was called with content capture off")
		}
	}
}

// TestMediaBytesCaptured: with WithCaptureMediaBytes a part within the cap
// is a blob part with the base64 of its bytes, which the built-in rules do
// not touch even where they look like a key, while a secret in the text
// of the same message is redacted; a part over the cap is its reference,
// marked truncated and counted; LangSmith's copy never holds bytes.
func TestMediaBytesCaptured(t *testing.T) {
	// Bytes whose base64 reads like a Google API key (AIza and 36 more).
	keyLike, err := base64.StdEncoding.DecodeString("AIza" + strings.Repeat("B", 36))
	if err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("0123456789abcdef", 8)) // 128 bytes, over the cap of 100
	tp, sr := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithCaptureMediaBytes(true), tracing.WithMaxMediaBytes(100),
		tracing.WithLangSmithPromptKeys(true))
	a := newAgentExt(t, ext, []harnesstest.Response{harnesstest.Reply("two images")})
	if _, err := a.RunMessage(context.Background(), harness.UserParts(
		harness.Text("my key is "+secretUser),
		harness.ImagePart(keyLike, "image/png"),
		harness.ImagePart(big, "image/jpeg"),
	)); err != nil {
		t.Fatal(err)
	}
	chat := byName(spans(sr), "chat m")[0]
	parts := decodeMessages(t, str(chat, semconv.GenAIInputMessagesKey))[0].Parts
	if c, _ := parts[0]["content"].(string); strings.Contains(c, secretUser) || !strings.Contains(c, "[REDACTED:") {
		t.Errorf("text part %q, want its secret redacted", c)
	}
	if p := parts[1]; p["type"] != "blob" || p["modality"] != "image" || p["mime_type"] != "image/png" ||
		p["content"] != base64.StdEncoding.EncodeToString(keyLike) || p["size"] != float64(len(keyLike)) || p["sha256"] != hexSum(keyLike) {
		t.Errorf("part within the cap: %v, want a blob with the base64 of the bytes, untouched", p)
	}
	checkRefPart(t, "part over the cap", parts[2], "image", "image/jpeg", big)
	if parts[2]["truncated"] != true {
		t.Errorf("part over the cap %v, want truncated", parts[2])
	}
	if v, _ := attr(chat, tracing.KeyTruncated); !strings.Contains(v.Emit(), string(semconv.GenAIInputMessagesKey)) {
		t.Errorf("harnessx.truncated = %s, want the input messages", v.Emit())
	}
	if s := ext.Stats(); s.Truncated < 1 || s.TruncatedBytes < int64(len(big)) {
		t.Errorf("stats %+v, want the part over the cap counted", s)
	}
	prompt := str(chat, tracing.KeyPrompt)
	if strings.Contains(prompt, base64.StdEncoding.EncodeToString(keyLike)) || !strings.Contains(prompt, ref(keyLike)) {
		t.Errorf("gen_ai.prompt = %s, want the reference and no bytes", prompt)
	}
	if strings.Contains(prompt, secretUser) {
		t.Error("gen_ai.prompt holds the secret")
	}
}

// TestMediaBytesInGenerate: a request made with Agent.Generate (outside
// the run's steps, not from the history cache) records its blob too, and
// redacts the text around it.
func TestMediaBytesInGenerate(t *testing.T) {
	tp, sr := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithCaptureMediaBytes(true))
	a := newAgentExt(t, ext, []harnesstest.Response{harnesstest.Reply("a cat")})
	if _, err := a.Generate(context.Background(), &harness.ModelRequest{Messages: []harness.Message{
		harness.UserParts(harness.Text("token="+secretUser), harness.ImagePart(userPNG, "image/png")),
	}}); err != nil {
		t.Fatal(err)
	}
	chat := byName(spans(sr), "chat m")[0]
	parts := decodeMessages(t, str(chat, semconv.GenAIInputMessagesKey))[0].Parts
	if c, _ := parts[0]["content"].(string); strings.Contains(c, secretUser) {
		t.Errorf("text part %q, want its secret redacted", c)
	}
	if p := parts[1]; p["type"] != "blob" || p["content"] != base64.StdEncoding.EncodeToString(userPNG) {
		t.Errorf("image part %v, want a blob", p)
	}
}

// imageProvider answers with an image it made.
type imageProvider struct{}

func (imageProvider) Generate(context.Context, *harness.ModelRequest) (*harness.ModelResponse, error) {
	return &harness.ModelResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: []harness.Part{
		harness.Text("here it is"), harness.ImagePart(shotPNG, "image/webp"),
	}}, StopReason: harness.StopEndTurn, Usage: harness.Usage{InputTokens: 5, OutputTokens: 300}}, nil
}

// TestMediaInOutput: an image the model returns is in
// gen_ai.output.messages by reference, or as a blob with the bytes on.
func TestMediaInOutput(t *testing.T) {
	for _, bytesOn := range []bool{false, true} {
		tp, sr := recorderTP(t)
		ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithCaptureMediaBytes(bytesOn), tracing.WithLangSmithPromptKeys(true))
		a, err := harness.New(harness.WithProvider(imageProvider{}), harness.WithModel("m"),
			harness.WithLogger(slog.New(slog.DiscardHandler)), harness.WithExtensions(ext))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(context.Background()) })
		if _, err := a.Run(context.Background(), "draw"); err != nil {
			t.Fatal(err)
		}
		chat := byName(spans(sr), "chat m")[0]
		out := decodeMessages(t, str(chat, semconv.GenAIOutputMessagesKey))[0].Parts
		if len(out) != 2 {
			t.Fatalf("output parts %v", out)
		}
		if bytesOn {
			if p := out[1]; p["type"] != "blob" || p["mime_type"] != "image/webp" || p["content"] != base64.StdEncoding.EncodeToString(shotPNG) {
				t.Errorf("output image %v, want a blob", p)
			}
		} else {
			checkRefPart(t, "output image", out[1], "image", "image/webp", shotPNG)
		}
		if c := str(chat, tracing.KeyCompletion); strings.Contains(c, base64.StdEncoding.EncodeToString(shotPNG)) || !strings.Contains(c, ref(shotPNG)) {
			t.Errorf("gen_ai.completion = %s, want the reference and no bytes", c)
		}
	}
}

// TestPartUploader: the uploader's URI replaces the reference, once per
// distinct bytes, and passes through the secret rules; a failure (an
// error or a panic) falls back to the reference, is counted and does not
// fail the run.
func TestPartUploader(t *testing.T) {
	t.Run("uploaded", func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		up := func(ctx context.Context, p harness.Part) (string, error) {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			sum := sha256.Sum256(p.Media.Data)
			mu.Lock()
			calls[hex.EncodeToString(sum[:8])]++
			mu.Unlock()
			return "https://store.example/media/" + hex.EncodeToString(sum[:8]) + "?X-Token=" + secretQuery, nil
		}
		all, ext := runMedia(t, tracing.WithPartUploader(up))
		for _, data := range inlineData {
			sum := sha256.Sum256(data)
			if n := calls[hex.EncodeToString(sum[:8])]; n != 1 {
				t.Errorf("uploader called %d times for %q, want once", n, data[:8])
			}
		}
		chats := byName(all, "chat m")
		user := decodeMessages(t, str(chats[0], semconv.GenAIInputMessagesKey))[0].Parts
		sum := sha256.Sum256(userPNG)
		want := "https://store.example/media/" + hex.EncodeToString(sum[:8]) + "?X-Token=[REDACTED:secret-assignment]"
		if p := user[1]; p["type"] != "uri" || p["uri"] != want || p["sha256"] != hexSum(userPNG) || p["size"] != float64(len(userPNG)) {
			t.Errorf("uploaded part %v, want uri %s with the size and SHA-256", p, want)
		}
		tool := byName(all, "execute_tool screenshot")[0]
		if got := str(tool, tracing.KeyToolCallResultParts); !strings.Contains(got, "https://store.example/media/") || strings.Contains(got, "artifact:") {
			t.Errorf("tool result parts %s, want the uploaded URI", got)
		}
		got := allText(all)
		if strings.Contains(got, secretQuery) {
			t.Error("a span holds the uploaded URI's secret")
		}
		if strings.Contains(got, ref(userPNG)) {
			t.Error("a span holds the reference of an uploaded part")
		}
		checkNoBytes(t, got, inlineData...)
		if s := ext.Stats(); s.UploadErrors != 0 {
			t.Errorf("UploadErrors = %d", s.UploadErrors)
		}
	})
	for name, fail := range map[string]func() (string, error){
		"error": func() (string, error) { return "", errors.New("bucket unavailable") },
		"panic": func() (string, error) { panic("uploader bug") },
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int64
			up := func(context.Context, harness.Part) (string, error) {
				calls.Add(1)
				return fail()
			}
			tp, sr := recorderTP(t)
			ext := tracing.New(tracing.WithTracerProvider(tp), tracing.WithPartUploader(up))
			a := newAgentExt(t, ext, []harnesstest.Response{harnesstest.CallTool("c1", "weather", `{"city":"Oslo"}`), harnesstest.Reply("a cat")})
			res, err := a.RunMessage(context.Background(), harness.UserParts(harness.Text("what is it?"), harness.ImagePart(userPNG, "image/png")))
			if err != nil || res.Status != harness.StatusCompleted {
				t.Fatalf("run: %v, %v", err, res)
			}
			for i, chat := range byName(spans(sr), "chat m") {
				parts := decodeMessages(t, str(chat, semconv.GenAIInputMessagesKey))[0].Parts
				checkRefPart(t, "image after a failed upload", parts[1], "image", "image/png", userPNG)
				if chat.Status().Code != 0 {
					t.Errorf("chat span %d has status %v", i, chat.Status())
				}
			}
			// The user message is encoded once for the chat spans (the
			// history cache) and once for the agent span; a failure is
			// not remembered, so each is a call, and each is counted.
			if s := ext.Stats(); s.UploadErrors != 2 || calls.Load() != 2 {
				t.Errorf("UploadErrors = %d after %d calls, want 2 and 2", s.UploadErrors, calls.Load())
			}
		})
	}
}

// TestImageTokens: image and audio input tokens that the provider reports
// are on the chat and agent spans and in langsmith.usage_metadata, as
// parts of the input tokens, and the cost prices the input tokens, images
// included, at the input price: the table has no separate image price.
func TestImageTokens(t *testing.T) {
	const model = "gpt-4o"
	price, ok := pricing.Default().Lookup(model)
	if !ok {
		t.Fatalf("no price for %s", model)
	}
	u := harness.Usage{InputTokens: 1500, OutputTokens: 20, ImageInputTokens: 1105, AudioInputTokens: 40}
	tp, sr := recorderTP(t)
	ext := tracing.New(tracing.WithTracerProvider(tp))
	a := newAgentExt(t, ext, []harnesstest.Response{{Text: "a cat", Usage: u}}, harness.WithModel(model))
	if _, err := a.RunMessage(context.Background(), harness.UserParts(harness.Text("what is it?"), harness.ImagePart(userPNG, "image/png"))); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	chat := byName(all, "chat "+model)[0]
	run := byName(all, "invoke_agent weatherbot")[0]
	for _, s := range []sdktrace.ReadOnlySpan{chat, run} {
		a := attrs(s)
		if a[semconv.GenAIUsageInputTokensKey].AsInt64() != 1500 || a[tracing.KeyUsageImageInputTokens].AsInt64() != 1105 ||
			a[tracing.KeyUsageAudioInputTokens].AsInt64() != 40 {
			t.Errorf("%s: input %v, image %v, audio %v", s.Name(), a[semconv.GenAIUsageInputTokensKey].Emit(),
				a[tracing.KeyUsageImageInputTokens].Emit(), a[tracing.KeyUsageAudioInputTokens].Emit())
		}
		want := 1500*price.Input*1e-6 + 20*price.Output*1e-6
		if got := a["harnessx.cost.usd"].AsFloat64(); !near(got, want) {
			t.Errorf("%s: cost %v, want %v (every input token at the input price)", s.Name(), got, want)
		}
	}
	var lu struct {
		InputTokens int64            `json:"input_tokens"`
		Details     map[string]int64 `json:"input_token_details"`
	}
	if err := json.Unmarshal([]byte(str(chat, tracing.KeyLangSmithUsage)), &lu); err != nil {
		t.Fatal(err)
	}
	if lu.InputTokens != 1500 || lu.Details["image"] != 1105 || lu.Details["audio"] != 40 {
		t.Errorf("langsmith.usage_metadata = %s", str(chat, tracing.KeyLangSmithUsage))
	}

	// Without image tokens reported apart, no such key, and the cost is
	// the same: the image's tokens are in the input tokens either way.
	tp2, sr2 := recorderTP(t)
	a2 := newAgentExt(t, tracing.New(tracing.WithTracerProvider(tp2)), []harnesstest.Response{{Text: "a cat",
		Usage: harness.Usage{InputTokens: 1500, OutputTokens: 20}}}, harness.WithModel(model))
	if _, err := a2.RunMessage(context.Background(), harness.UserParts(harness.ImagePart(userPNG, "image/png"))); err != nil {
		t.Fatal(err)
	}
	chat2 := byName(spans(sr2), "chat "+model)[0]
	if _, ok := attr(chat2, tracing.KeyUsageImageInputTokens); ok {
		t.Error("image tokens recorded though the provider reported none")
	}
	if strings.Contains(str(chat2, tracing.KeyLangSmithUsage), "image") {
		t.Errorf("langsmith.usage_metadata = %s", str(chat2, tracing.KeyLangSmithUsage))
	}
	if c1, c2 := attrs(chat)["harnessx.cost.usd"].AsFloat64(), attrs(chat2)["harnessx.cost.usd"].AsFloat64(); !near(c1, c2) {
		t.Errorf("cost with image tokens reported %v, without %v: want the same", c1, c2)
	}
}

// TestImageTokensMetric: the image and audio input tokens a provider
// reports are harnessx.client.token.usage.detail points with token types
// image and audio; none without them.
func TestImageTokensMetric(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tp, _ := recorderTP(t)
	a := newAgentExt(t, tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)), []harnesstest.Response{
		{Text: "a cat", Usage: harness.Usage{InputTokens: 1500, OutputTokens: 20, ImageInputTokens: 1105, AudioInputTokens: 40}},
		{Text: "text only", Usage: harness.Usage{InputTokens: 30, OutputTokens: 5}},
	})
	for range 2 {
		if _, err := a.Run(context.Background(), "go"); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{} // token type: count, sum
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != tracing.MetricTokenDetail {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
				typ, _ := dp.Attributes.Value(tracing.KeyTokenType)
				got[typ.AsString()] = [2]int64{int64(dp.Count), dp.Sum}
			}
		}
	}
	if got["image"] != [2]int64{1, 1105} || got["audio"] != [2]int64{1, 40} {
		t.Errorf("detail points %v, want one image point of 1105 and one audio point of 40", got)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-12 && d > -1e-12
}

// TestMaxMediaBytesMustBePositive: WithMaxMediaBytes(0) fails the install.
func TestMaxMediaBytesMustBePositive(t *testing.T) {
	tp, _ := recorderTP(t)
	_, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider()), harness.WithModel("m"),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithMaxMediaBytes(0))))
	var ce *tracing.ConfigError
	if !errors.As(err, &ce) || ce.Option != "WithMaxMediaBytes" {
		t.Fatalf("err = %v, want a ConfigError for WithMaxMediaBytes", err)
	}
}
