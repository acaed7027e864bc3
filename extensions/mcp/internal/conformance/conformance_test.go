package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConformanceSuite runs every client scenario of the MCP conformance
// suite against this client. It needs the suite and a Node.js 22, which
// .ci/mcp-conformance.sh installs into a cache directory and names in
// HARNESSX_MCP_CONFORMANCE; without it the test is skipped. It fails when
// a scenario that baseline.yml does not list fails, or when one it lists
// passes, and logs the table of scenarios.
func TestConformanceSuite(t *testing.T) {
	dir := os.Getenv("HARNESSX_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("HARNESSX_MCP_CONFORMANCE is not set; run .ci/mcp-conformance.sh")
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("HARNESSX_MCP_CONFORMANCE=%s: %v", dir, err)
		}
	}
	baselineFile, err := filepath.Abs("baseline.yml")
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := readBaseline(baselineFile)
	if err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	bin := filepath.Join(work, "client")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	results := filepath.Join(work, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "client", "--command", bin, "--suite", "all",
		"--expected-failures", baselineFile, "--output-dir", results)
	cmd.Dir = work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	suiteErr := cmd.Run()
	t.Logf("the suite ran in %v", time.Since(start).Round(time.Second))

	got, err := readResults(results)
	if err != nil || len(got) == 0 {
		t.Fatalf("reading the results (%v); the suite said (%v):\n%s", err, suiteErr, out.String())
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| scenario | result | checks | baseline |\n|---|---|---|---|\n")
	var unexpected, stale []string
	for _, r := range got {
		listed := baseline[r.scenario]
		res := "pass"
		if r.failed > 0 {
			res = "FAIL"
		}
		bl := ""
		if listed {
			bl = "expected failure"
		}
		fmt.Fprintf(&table, "| %s | %s | %d/%d | %s |\n", r.scenario, res, r.passed, r.passed+r.failed, bl)
		switch {
		case r.failed > 0 && !listed:
			unexpected = append(unexpected, r.scenario+": "+r.firstFailure)
		case r.failed == 0 && listed:
			stale = append(stale, r.scenario)
		}
	}
	t.Log(table.String())
	for name := range baseline {
		if !slices.ContainsFunc(got, func(r scenarioResult) bool { return r.scenario == name }) {
			t.Logf("baseline.yml lists %s, which the suite did not run", name)
		}
	}
	for _, u := range unexpected {
		t.Errorf("unexpected failure: %s", u)
	}
	for _, s := range stale {
		t.Errorf("%s passes: remove it from baseline.yml", s)
	}
	if suiteErr != nil && len(unexpected) == 0 && len(stale) == 0 {
		t.Errorf("the suite failed (%v) though every scenario matched the baseline:\n%s", suiteErr, out.String())
	}
	if t.Failed() {
		t.Logf("the suite's output:\n%s", out.String())
	}
}

// readBaseline reads the client scenarios of an expected-failures file:
// the "- name" items under "client:".
func readBaseline(file string) (map[string]bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]bool{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			section = strings.TrimSuffix(trimmed, ":")
		case strings.HasPrefix(trimmed, "- ") && section == "client":
			m[strings.TrimSpace(strings.TrimPrefix(trimmed, "- "))] = true
		}
	}
	return m, sc.Err()
}

type scenarioResult struct {
	scenario       string
	passed, failed int
	firstFailure   string
}

// resultDir is the name of a scenario's results directory:
// "<scenario>-<timestamp>".
var resultDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)

// readResults reads the checks.json of every scenario under dir, in the
// order of their names.
func readResults(dir string) ([]scenarioResult, error) {
	var out []scenarioResult
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return fmt.Errorf("unexpected results directory %s", rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		r := scenarioResult{scenario: m[1]}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				r.passed++
			case "FAILURE":
				r.failed++
				if r.firstFailure == "" {
					r.firstFailure = c.ID + ": " + c.ErrorMessage
				}
			}
		}
		out = append(out, r)
		return nil
	})
	slices.SortFunc(out, func(a, b scenarioResult) int { return strings.Compare(a.scenario, b.scenario) })
	return out, err
}
