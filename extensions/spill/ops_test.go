package spill

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type fixture struct {
	name string
	data string
	typ  Type
}

func fixtures() []fixture {
	return []fixture{
		{"csv", csvData(3000), TypeCSV},
		{"json", jsonArrayData(3000), TypeJSON},
		{"jsonl", jsonlData(3000), TypeJSONL},
		{"text", textData(5000), TypeText},
	}
}

func where(col, op string, v any) []any {
	return []any{map[string]any{"column": col, "op": op, "value": v}}
}

// TestReadOps runs every operation on every kind of result and compares
// the output with golden files; the "contains" strings pin the facts that
// matter in each.
func TestReadOps(t *testing.T) {
	e := newExt(t)
	ids := map[string]string{}
	for _, f := range fixtures() {
		r := spillString(t, e, "export", f.data)
		if r.Type != f.typ {
			t.Fatalf("%s: detected %s, want %s", f.name, r.Type, f.typ)
		}
		ids[f.name] = r.ID
	}
	tabular := []string{"csv", "json", "jsonl"}
	type tc struct {
		name     string
		on       []string
		args     map[string]any
		contains []string
	}
	cases := []tc{
		{"slice-lines", []string{"csv", "text"}, map[string]any{"op": "slice", "offset": 10, "limit": 3},
			[]string{"lines 11 to 13 of ", "\n11: ", "\n13: ", "continue with offset=13"}},
		{"slice-lines-default", []string{"text"}, map[string]any{"op": "slice"}, []string{"lines 1 to 100 of 5000", "100: 000100 INFO"}},
		{"slice-lines-last", []string{"text"}, map[string]any{"op": "slice", "offset": 4998, "limit": 10},
			[]string{"lines 4999 to 5000 of 5000", "5000: 005000 INFO"}},
		{"slice-bytes", []string{"csv", "json", "text"}, map[string]any{"op": "slice", "unit": "bytes", "offset": 7, "limit": 40},
			[]string{"bytes 7 to 47 of "}},
		{"search", []string{"text"}, map[string]any{"op": "search", "pattern": "zanzibar"},
			[]string{"5 matching lines", "500: 000500 WARN", "4500: 004500 WARN"}},
		{"search-context", []string{"text"}, map[string]any{"op": "search", "pattern": "zan+zibar hub$", "context": 2, "max_matches": 2},
			[]string{"2 matching lines; stopped at max_matches=2", "498- ", "502- ", "--\n1498- ", "1500: "}},
		{"search-offset", []string{"text"}, map[string]any{"op": "search", "pattern": "ZANZIBAR", "ignore_case": true, "offset": 1500},
			[]string{"after line 1500: 3 matching lines", "2500: "}},
		{"search-csv", []string{"csv"}, map[string]any{"op": "search", "pattern": `^10(0[0-4]),`, "context": 1},
			[]string{"5 matching lines", "1- order_id", "2: 1000,", "6: 1004,", "7- 1005,"}},
		{"columns", tabular, map[string]any{"op": "columns"}, []string{"order_id (number)", "amount (number)", "all 3000 rows"}},
		{"rows", tabular, map[string]any{"op": "rows", "offset": 2, "limit": 2},
			[]string{"2 rows from offset 2", "[2] {\"order_id\":", "1002", "[3] "}},
		{"rows-filter-project", tabular, map[string]any{"op": "rows", "limit": 3, "columns": []string{"order_id", "amount"},
			"where": []any{map[string]any{"column": "country", "op": "eq", "value": "JP"}, map[string]any{"column": "amount", "op": "gte", "value": 50}}},
			[]string{"[43] {\"order_id\":", "53.43", "[48] "}},
		{"rows-contains", tabular, map[string]any{"op": "rows", "where": where("customer", "contains", "customer 9"), "limit": 2, "columns": []string{"customer"}},
			[]string{"[9] {\"customer\":\"customer 9\"}", "[90] {\"customer\":\"customer 90\"}"}},
		{"count", tabular, map[string]any{"op": "count"}, []string{"count: 3000 of 3000 rows"}},
		{"count-filter", tabular, map[string]any{"op": "count", "where": where("status", "ne", "paid")},
			[]string{"count: 2000 of 3000 rows where status ne \"paid\""}},
		{"count-lt", tabular, map[string]any{"op": "count", "where": where("amount", "lt", 11)}, []string{"count: 60 of 3000 rows"}},
		{"count-text-gt", tabular, map[string]any{"op": "count", "where": where("country", "gt", "FR")}, []string{"count: 1200 of 3000"}},
		{"aggregate", tabular, map[string]any{"op": "aggregate", "column": "amount"},
			[]string{"over 3000 of 3000 rows", "3000 numeric values", "sum = 104985\n", "min = 10\n", "max = 59.99", "mean = 34.995"}},
		{"aggregate-filter-func", tabular, map[string]any{"op": "aggregate", "column": "amount", "func": "max", "where": where("country", "eq", "PT")},
			[]string{"over 600 of 3000 rows where country eq \"PT\"", "max = 55.95"}},
	}
	for _, c := range cases {
		for _, on := range c.on {
			t.Run(c.name+"/"+on, func(t *testing.T) {
				a := map[string]any{"id": ids[on]}
				for k, v := range c.args {
					a[k] = v
				}
				out, err := read(e, a)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				for _, s := range c.contains {
					if !strings.Contains(out, s) {
						t.Errorf("output lacks %q", s)
					}
				}
				golden(t, "ops/"+c.name+"-"+on, stable(out))
			})
		}
	}
}

// TestReadErrors checks that bad requests give clear errors, never panics.
func TestReadErrors(t *testing.T) {
	e := newExt(t)
	csvID := spillString(t, e, "export", csvData(100)).ID
	textID := spillString(t, e, "logs", textData(100)).ID
	// Damage past the 64 KiB that type detection samples, as in a large
	// export with one bad row deep inside.
	badCSV := spillString(t, e, "export", csvData(3000)+"5\n6,7\n").ID
	badJSONL := spillString(t, e, "export", jsonlData(1000)+"{\"a\":\n").ID
	badJSON := spillString(t, e, "export", strings.TrimSuffix(jsonArrayData(1000), "\n]\n")+",{\"a\" 3}]").ID
	objJSON := spillString(t, e, "export", "{\"a\": [1, 2, 3]}").ID
	unknown := "res_000000000000000000000000"
	cases := []struct {
		name     string
		raw      string
		is       error
		contains string
	}{
		{"not json", `{"id":`, ErrBadArgs, "not a valid JSON object"},
		{"unknown field", `{"id":"` + csvID + `","op":"count","bogus":1}`, ErrBadArgs, "bogus"},
		{"missing id", `{"op":"count"}`, ErrBadArgs, `"id"`},
		{"missing op", `{"id":"` + csvID + `"}`, ErrBadArgs, `"op"`},
		{"unknown op", `{"id":"` + csvID + `","op":"delete"}`, ErrBadArgs, "not an operation"},
		{"field of other op", `{"id":"` + csvID + `","op":"count","pattern":"x"}`, ErrBadArgs, "does not apply to op"},
		{"negative offset", `{"id":"` + csvID + `","op":"slice","offset":-1}`, ErrBadArgs, "negative"},
		{"bad unit", `{"id":"` + csvID + `","op":"slice","unit":"pages"}`, ErrBadArgs, "unit"},
		{"unknown id", `{"id":"` + unknown + `","op":"count"}`, ErrUnknownID, unknown},
		{"escape dotdot", `{"id":"../../etc/passwd","op":"slice"}`, ErrBadArgs, "not a result id"},
		{"escape absolute", `{"id":"/etc/passwd","op":"slice"}`, ErrBadArgs, "not a result id"},
		{"escape nul", `{"id":"res_00000000000000000000000\u0000","op":"slice"}`, ErrBadArgs, "not a result id"},
		{"escape separator", `{"id":"res_0000000000/00000000000000","op":"slice"}`, ErrBadArgs, "not a result id"},
		{"uppercase id", `{"id":"RES_000000000000000000000000","op":"slice"}`, ErrBadArgs, "not a result id"},
		{"bad regex", `{"id":"` + textID + `","op":"search","pattern":"a(b"}`, ErrBadArgs, "invalid regular expression"},
		{"empty pattern", `{"id":"` + textID + `","op":"search","pattern":""}`, ErrBadArgs, "pattern"},
		{"too much context", `{"id":"` + textID + `","op":"search","pattern":"a","context":99}`, ErrBadArgs, "context"},
		{"unknown column", `{"id":"` + csvID + `","op":"count","where":[{"column":"nope","op":"eq","value":1}]}`, ErrUnknownColumn, "order_id, customer"},
		{"unknown agg column", `{"id":"` + csvID + `","op":"aggregate","column":"total"}`, ErrUnknownColumn, `"total"`},
		{"bad where op", `{"id":"` + csvID + `","op":"count","where":[{"column":"a","op":"like","value":1}]}`, ErrBadArgs, "where[0]"},
		{"object where value", `{"id":"` + csvID + `","op":"count","where":[{"column":"a","op":"eq","value":{}}]}`, ErrBadArgs, "value must be"},
		{"line offset past end", `{"id":"` + textID + `","op":"slice","offset":100}`, ErrOutOfRange, "has 100 lines"},
		{"byte offset past end", `{"id":"` + textID + `","op":"slice","unit":"bytes","offset":99999999}`, ErrOutOfRange, "bytes"},
		{"row offset past end", `{"id":"` + csvID + `","op":"rows","offset":100}`, ErrOutOfRange, "100 rows"},
		{"not tabular", `{"id":"` + textID + `","op":"count"}`, ErrNotTabular, "is text"},
		{"json object not array", `{"id":"` + objJSON + `","op":"rows"}`, ErrNotTabular, "not an array"},
		{"malformed csv row", `{"id":"` + badCSV + `","op":"count"}`, ErrMalformed, "line 3002 (row 3000): wrong number of fields"},
		{"malformed jsonl", `{"id":"` + badJSONL + `","op":"count"}`, ErrMalformed, "line 1001 (row 1000)"},
		{"malformed json", `{"id":"` + badJSON + `","op":"count"}`, ErrMalformed, "at row 1000: invalid character '3'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := e.Read(t.Context(), []byte(c.raw))
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.contains) {
				t.Errorf("error %q lacks %q", err, c.contains)
			}
		})
	}
}

func TestOutputCap(t *testing.T) {
	e := newExt(t, WithMaxOutput(2048))
	id := spillString(t, e, "logs", textData(5000)).ID
	table := spillString(t, e, "table", csvData(5000)).ID
	cases := []struct {
		name string
		args map[string]any
		note string
	}{
		{"slice", map[string]any{"op": "slice", "limit": 1000}, "continue with offset="},
		{"search", map[string]any{"op": "search", "pattern": "INFO", "max_matches": 1000}, "search again with offset="},
		// The body keeps headReserve bytes of the cap for the head and notes.
		{"bytes", map[string]any{"op": "slice", "unit": "bytes", "limit": 100000}, fmt.Sprintf("continue with unit=bytes offset=%d", 2048-headReserve)},
		{"rows", map[string]any{"op": "rows", "limit": 1000}, "continue with offset="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.args["id"] = id
			if c.args["op"] == "rows" {
				c.args["id"] = table
			}
			out, err := read(e, c.args)
			if err != nil {
				t.Fatal(err)
			}
			// A cut listing must not present its partial count as final.
			if c.args["op"] == "rows" && !strings.Contains(out, "more may follow") {
				t.Errorf("a cut rows listing must say more may follow:\n%s", out)
			}
			// The cap holds for the whole reply, head and notes included.
			if len(out) > 2048 {
				t.Errorf("output is %d bytes, cap 2048", len(out))
			}
			if !strings.Contains(out, c.note) {
				t.Errorf("output lacks the note %q:\n%s", c.note, out)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name string
		data string
		want Type
		cols string
	}{
		{"csv", "a,b,c\n1,2,3\n4,5,6\n", TypeCSV, "a,b,c"},
		{"csv quoted", "name,note\n\"x, y\",\"multi\nline\"\nz,w\n", TypeCSV, "name,note"},
		{"csv bom", "\ufeffa,b\n1,2\n", TypeCSV, "a,b"},
		{"one column is text", "a\n1\n2\n", TypeText, ""},
		{"ragged csv is text", "a,b\n1,2,3\n", TypeText, ""},
		{"json array", "  [{\"x\":1,\"y\":2},{\"x\":3}]\n", TypeJSON, "x,y"},
		{"json object", "{\"x\": {\"y\": 1}}", TypeJSON, ""},
		{"jsonl", "{\"x\":1}\n{\"x\":2}\n\n{\"x\":3}\n", TypeJSONL, "x"},
		{"broken json", "[1, 2", TypeText, ""},
		{"prose", "Hello, world.\nThis is text, with commas.\nAnd more, lines here, ok\n", TypeText, ""},
		{"empty", "", TypeText, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ, cols := detect([]byte(c.data), []byte(c.data), true)
			if typ != c.want || strings.Join(cols, ",") != c.cols {
				t.Errorf("detect = %s %q, want %s %q", typ, cols, c.want, c.cols)
			}
		})
	}
}

func TestEnvelope(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			e := newExt(t)
			r := spillString(t, e, "export", f.data)
			if r.Size != int64(len(f.data)) || r.Lines != int64(strings.Count(f.data, "\n")) {
				t.Errorf("size %d lines %d, want %d %d", r.Size, r.Lines, len(f.data), strings.Count(f.data, "\n"))
			}
			for _, s := range []string{"id: " + r.ID, "type: " + string(f.typ), "sha256: " + r.SHA256, "--- head ---", "--- tail ---", "read_result"} {
				if !strings.Contains(r.Envelope, s) {
					t.Errorf("envelope lacks %q", s)
				}
			}
			if len(r.Envelope) > 3*DefaultPreviewBytes+600 {
				t.Errorf("envelope is %d bytes", len(r.Envelope))
			}
			golden(t, "envelope-"+f.name, stable(r.Envelope))
		})
	}
}
