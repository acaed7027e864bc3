package pricing_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/pricing"
	"github.com/harnessx/harnessx/providers/anthropic"
	"github.com/harnessx/harnessx/providers/openai"
)

type goldenCost struct {
	Usage  harness.Usage `json:"usage"`
	Priced bool          `json:"priced"`
	Cost   struct {
		Input      float64 `json:"input"`
		CacheRead  float64 `json:"cache_read"`
		CacheWrite float64 `json:"cache_write"`
		Output     float64 `json:"output"`
		Reasoning  float64 `json:"reasoning"`
		Total      float64 `json:"total"`
	} `json:"cost"`
}

// vendorProvider returns the harnessx provider of the case's vendor,
// talking to a loopback server that answers every request with the
// vendor's raw response in testdata/vendor.
func vendorProvider(t *testing.T, name string) harness.Provider {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "vendor", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	var p harness.Provider
	switch {
	case strings.HasPrefix(name, "anthropic"):
		p, err = anthropic.New(anthropic.WithAPIKey("test"), anthropic.WithBaseURL(srv.URL), anthropic.WithMaxRetries(0))
	default:
		p, err = openai.New(openai.WithAPIKey("test"), openai.WithBaseURL(srv.URL), openai.WithMaxRetries(0))
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGoldenVendorUsage runs each vendor's raw, cache-heavy response
// through its harnessx provider and prices the usage with the built-in
// table: the provider's normalisation (Anthropic's input_tokens exclude
// the cache, harnessx's include it; OpenAI's prompt_tokens include the
// cached tokens and completion_tokens the reasoning) and the price
// arithmetic together must give the hand-computed costs of
// testdata/golden_costs.json, each token priced once.
func TestGoldenVendorUsage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden_costs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	table := pricing.Default()
	n := 0
	for name, msg := range cases {
		if strings.HasPrefix(name, "_") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			var want goldenCost
			if err := json.Unmarshal(msg, &want); err != nil {
				t.Fatal(err)
			}
			p := vendorProvider(t, name)
			resp, err := p.Generate(context.Background(), &harness.ModelRequest{Model: "requested-model", MaxTokens: 1024,
				Messages: []harness.Message{harness.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != want.Usage {
				t.Errorf("usage %+v, want %+v", resp.Usage, want.Usage)
			}
			got, ok := table.Cost(resp.Model, resp.Usage)
			if ok != want.Priced {
				t.Fatalf("model %q priced %v, want %v", resp.Model, ok, want.Priced)
			}
			w := want.Cost
			for _, c := range []struct {
				part      string
				got, want float64
			}{
				{"input", got.Input, w.Input}, {"cache_read", got.CacheRead, w.CacheRead},
				{"cache_write", got.CacheWrite, w.CacheWrite}, {"output", got.Output, w.Output},
				{"reasoning", got.Reasoning, w.Reasoning}, {"total", got.Total, w.Total},
			} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s: %.10f USD, want %.10f", c.part, c.got, c.want)
				}
			}
			if usd, ok2 := table.USD(resp.Model, resp.Usage); ok2 != ok || usd != got.Total {
				t.Errorf("USD = %v, %v; want %v, %v", usd, ok2, got.Total, ok)
			}
		})
	}
	if n < 4 {
		t.Fatalf("%d golden cases", n)
	}
}

func TestDefaultTable(t *testing.T) {
	table := pricing.Default()
	if err := table.Err(); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(table.AsOf()) {
		t.Errorf("as_of %q is not a date", table.AsOf())
	}
	vendors := map[string]int{}
	for _, m := range table.Models() {
		p, ok := table.Lookup(m)
		if !ok {
			t.Fatalf("%s listed but not found", m)
		}
		vendors[p.Provider]++
		if p.Input <= 0 || p.Output <= 0 || p.CacheRead <= 0 || p.CacheRead > p.Input || p.Reasoning != p.Output {
			t.Errorf("%s: implausible prices %+v", m, p.Rates)
		}
		if p.Provider == "anthropic" && math.Abs(p.CacheWrite-1.25*p.Input) > 1e-9 {
			t.Errorf("%s: cache write %v, want Anthropic's 1.25 x input", m, p.CacheWrite)
		}
		if p.Provider == "openai" && p.CacheWrite != p.Input {
			t.Errorf("%s: cache write %v, want input (no surcharge)", m, p.CacheWrite)
		}
	}
	if vendors["anthropic"] < 5 || vendors["openai"] < 5 {
		t.Errorf("models by vendor %v", vendors)
	}
	// The models the README and examples use are priced.
	for _, m := range []string{"claude-haiku-5-5", "claude-sonnet-5-5", "gpt-5.4-mini", "gpt-5.4-mini-2026-03-17"} {
		if _, ok := table.Lookup(m); !ok {
			t.Errorf("%s has no price", m)
		}
	}
}

// TestExactNamesOnly: no prefix or fuzzy matching, so a model that is
// not listed never borrows a neighbour's price.
func TestExactNamesOnly(t *testing.T) {
	table := pricing.Default()
	sonnet, _ := table.Lookup("claude-sonnet-4-5")
	dated, ok := table.Lookup("claude-sonnet-4-5-20250929")
	if !ok || dated.Rates != sonnet.Rates {
		t.Errorf("the dated snapshot alias: %v %+v", ok, dated)
	}
	for _, m := range []string{"claude-sonnet-4-5-2025", "claude-sonnet-4", "gpt-4o-2024-05-13", "gpt-5.4-mini-2099-01-01",
		"GPT-4o", " gpt-4o", "gpt-4", "", "claude"} {
		if p, ok := table.Lookup(m); ok {
			t.Errorf("%q priced as %+v", m, p)
		}
		if _, ok := table.Cost(m, harness.Usage{InputTokens: 10}); ok {
			t.Errorf("%q costed", m)
		}
	}
	mini, _ := table.Lookup("gpt-4o-mini")
	full, _ := table.Lookup("gpt-4o")
	if mini.Input == full.Input {
		t.Error("gpt-4o-mini has gpt-4o's price")
	}
	var none *pricing.Table
	if _, ok := none.Cost("gpt-4o", harness.Usage{InputTokens: 1}); ok {
		t.Error("a nil table priced a request")
	}
}

func TestCostArithmetic(t *testing.T) {
	table, err := pricing.Parse([]byte(`{"format": 1, "as_of": "2026-01-02", "models": [
		{"model": "m", "input": 2, "output": 10, "cache_read": 0.2, "cache_write": 2.5, "reasoning": 12,
		 "long_context": {"above_input_tokens": 1000, "input": 4, "output": 20}},
		{"model": "bare", "input": 1, "output": 3}]}`), "inline.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		model string
		u     harness.Usage
		want  pricing.Cost
	}{
		{"plain, at the threshold", "m", harness.Usage{InputTokens: 1000, OutputTokens: 100_000},
			pricing.Cost{Input: 0.002, Output: 1, Total: 1.002}},
		{"every part", "m", harness.Usage{InputTokens: 1000, OutputTokens: 300, CacheReadInputTokens: 600, CacheCreationInputTokens: 100, ReasoningTokens: 100},
			pricing.Cost{Input: 300 * 2e-6, CacheRead: 600 * 0.2e-6, CacheWrite: 100 * 2.5e-6, Output: 200 * 10e-6, Reasoning: 100 * 12e-6,
				Total: 300*2e-6 + 600*0.2e-6 + 100*2.5e-6 + 200*10e-6 + 100*12e-6}},
		{"long context: omitted tier prices are the tier's input and output", "m",
			harness.Usage{InputTokens: 1001, OutputTokens: 10, CacheReadInputTokens: 1, ReasoningTokens: 5},
			pricing.Cost{Input: 1000 * 4e-6, CacheRead: 1 * 4e-6, Output: 5 * 20e-6, Reasoning: 5 * 20e-6,
				Total: 1000*4e-6 + 4e-6 + 5*20e-6 + 5*20e-6}},
		{"omitted prices: cache as input, reasoning as output", "bare",
			harness.Usage{InputTokens: 100, OutputTokens: 10, CacheReadInputTokens: 50, CacheCreationInputTokens: 20, ReasoningTokens: 4},
			pricing.Cost{Input: 30e-6, CacheRead: 50e-6, CacheWrite: 20e-6, Output: 6 * 3e-6, Reasoning: 4 * 3e-6,
				Total: 100e-6 + 10*3e-6}},
		{"image and audio tokens are input tokens, priced once", "m",
			harness.Usage{InputTokens: 900, OutputTokens: 10, CacheReadInputTokens: 100, ImageInputTokens: 765, AudioInputTokens: 50},
			pricing.Cost{Input: 800 * 2e-6, CacheRead: 100 * 0.2e-6, Output: 10 * 10e-6, Total: 800*2e-6 + 100*0.2e-6 + 10*10e-6}},
		{"inconsistent counts never go negative", "bare", harness.Usage{InputTokens: 10, CacheReadInputTokens: 50, OutputTokens: 1, ReasoningTokens: 3},
			pricing.Cost{CacheRead: 50e-6, Reasoning: 9e-6, Total: 59e-6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := table.Cost(tt.model, tt.u)
			if !ok {
				t.Fatal("not priced")
			}
			for _, c := range [][2]float64{{got.Input, tt.want.Input}, {got.CacheRead, tt.want.CacheRead}, {got.CacheWrite, tt.want.CacheWrite},
				{got.Output, tt.want.Output}, {got.Reasoning, tt.want.Reasoning}, {got.Total, tt.want.Total}} {
				if math.Abs(c[0]-c[1]) > 1e-15 {
					t.Fatalf("cost %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // a substring of the error
	}{
		{"syntax", "{\"format\": 1,\n \"models\": [\n  {\"model\": \"x\" \"input\": 1}]}", "bad.json:3:"},
		{"type", "{\"format\": 1,\n \"models\": [\n  {\"model\": \"x\", \"input\": \"3\", \"output\": 1}]}", "bad.json:3:"},
		{"type names the field", "{\"format\": 1, \"models\": [{\"model\": \"x\", \"input\": \"3\", \"output\": 1}]}", "models.input"},
		{"unknown field", "{\"format\": 1,\n \"models\": [\n  {\"model\": \"x\", \"inptu\": 1, \"output\": 1}]}", `bad.json:3:`},
		{"unknown field named", `{"format": 1, "models": [{"model": "x", "inptu": 1, "output": 1}]}`, `unknown field "inptu"`},
		{"missing input", `{"format": 1, "models": [{"model": "a", "input": 1, "output": 1}, {"model": "x", "output": 1}]}`, "models[1] (x).input: missing"},
		{"negative", `{"format": 1, "models": [{"model": "x", "input": 1, "output": 1, "cache_read": -0.1}]}`, "models[0] (x).cache_read: -0.1 is not a price"},
		{"duplicate alias", `{"format": 1, "models": [{"model": "x", "input": 1, "output": 1}, {"model": "y", "aliases": ["x"], "input": 1, "output": 1}]}`, `"x" is listed twice`},
		{"bad tier", `{"format": 1, "models": [{"model": "x", "input": 1, "output": 1, "long_context": {"input": 2, "output": 2}}]}`, "long_context.above_input_tokens"},
		{"format", `{"format": 2, "models": []}`, "format: 2 is not a known format"},
		{"currency", `{"format": 1, "currency": "EUR", "models": []}`, "currency"},
		{"empty", ``, "empty or truncated"},
		{"trailing", `{"format": 1, "models": []} {}`, "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pricing.Parse([]byte(tt.src), "bad.json")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, pricing.ErrInvalidPrices) {
				t.Errorf("%v does not wrap ErrInvalidPrices", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad.json") {
				t.Errorf("error %q, want it to name the file and contain %q", err, tt.want)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(own, []byte(`{"format": 1, "as_of": "2027-01-01", "models": [
		{"model": "claude-sonnet-4-5", "input": 1, "output": 2},
		{"model": "my-finetune", "aliases": ["my-finetune-v2"], "input": 0.5, "output": 1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n\"format\": 1,\n\"models\": [}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("unset: built-in", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, "")
		table, err := pricing.FromEnv()
		if err != nil || table == nil || table.AsOf() != pricing.Default().AsOf() {
			t.Fatalf("%v %v", table, err)
		}
	})
	t.Run("off", func(t *testing.T) {
		for _, v := range []string{"off", "OFF", "none", "0", "false"} {
			t.Setenv(pricing.EnvPrices, v)
			table, err := pricing.FromEnv()
			if err != nil || table != nil {
				t.Errorf("%s: table %v, err %v; want none", v, table, err)
			}
		}
	})
	t.Run("file over built-in", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, own)
		table, err := pricing.FromEnv()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"} {
			if p, _ := table.Lookup(m); p.Input != 1 || p.CacheRead != 1 {
				t.Errorf("%s: %+v, want the file's price (the alias too)", m, p.Rates)
			}
		}
		if p, ok := table.Lookup("my-finetune-v2"); !ok || p.Input != 0.5 {
			t.Errorf("the file's own model: %v %+v", ok, p)
		}
		if _, ok := table.Lookup("gpt-5.4-mini"); !ok {
			t.Error("the built-in models are gone")
		}
		if table.AsOf() != "2027-01-01" {
			t.Errorf("as of %q", table.AsOf())
		}
	})
	t.Run("bad file", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, bad)
		_, err := pricing.FromEnv()
		var fe *pricing.FileError
		if !errors.As(err, &fe) || fe.File != bad || fe.Line != 3 || !strings.Contains(err.Error(), pricing.EnvPrices) {
			t.Errorf("err %v, want a FileError naming %s line 3 and the variable", err, bad)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Setenv(pricing.EnvPrices, filepath.Join(dir, "nope.json"))
		if _, err := pricing.FromEnv(); err == nil || !strings.Contains(err.Error(), "nope.json") {
			t.Errorf("err %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile("prices.json")
	f.Add(seed)
	f.Add([]byte(`{"format": 1, "models": [{"model": "x", "input": 1, "output": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := pricing.Parse(data, "fuzz.json")
		if err != nil {
			if !errors.Is(err, pricing.ErrInvalidPrices) {
				t.Fatalf("error %v does not wrap ErrInvalidPrices", err)
			}
			return
		}
		for _, m := range table.Models() {
			c, ok := table.Cost(m, harness.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadInputTokens: 10, ReasoningTokens: 5})
			if !ok || c.Total < 0 || math.IsNaN(c.Total) {
				t.Fatalf("%s: %+v %v", m, c, ok)
			}
		}
	})
}
