package spill

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes allocated while fn ran (TotalAlloc counts
// every allocation, freed or not).
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRepliesBounded sends read_result requests carrying huge values (ids,
// operation names, columns, where values, patterns, unknown fields) and
// reads results whose stored data has huge column names and numbers. Every
// reply, error or not, must fit the output cap, quoting bad values by a
// short prefix; and reading a request must not copy its huge values over
// and over (allocations stay within a small multiple of its size).
func TestRepliesBounded(t *testing.T) {
	const maxReply = DefaultMaxOutput
	e := newExt(t)
	csvID := spillString(t, e, "export", csvData(300)).ID
	jsonID := spillString(t, e, "export", jsonArrayData(300)).ID
	jsonlID := spillString(t, e, "export", jsonlData(300)).ID
	textID := spillString(t, e, "logs", textData(2000)).ID

	// 4 MiB values: megabytes, as a model may send, yet cheap enough
	// under the race detector.
	const hugeSize = 4 << 20
	huge := strings.Repeat("a", hugeSize)
	hugeNum := "1" + strings.Repeat("0", hugeSize) // out of float64's range
	mb := func(i int) string { return fmt.Sprintf("%02d", i) + strings.Repeat("b", 1<<20) }
	twenty := func(column, op string, value func(int) any) []any {
		var w []any
		for i := range 20 {
			w = append(w, map[string]any{"column": column, "op": op, "value": value(i)})
		}
		return w
	}
	twentyCols := func(op string) []any {
		var w []any
		for i := range 20 {
			w = append(w, map[string]any{"column": mb(i), "op": op, "value": 1})
		}
		return w
	}
	hundredCols := func() []string {
		var c []string
		for i := range 100 {
			c = append(c, fmt.Sprintf("%03d", i)+strings.Repeat("c", 40<<10))
		}
		return c
	}()

	// Stored data with long names and huge values: a CSV header of 200
	// columns of 300 bytes (60 KB, within the sample that detects CSV);
	// JSON lines whose later rows have 60 different 64 KiB keys; and a
	// JSON number of 1 MiB digits.
	var header, row strings.Builder
	for i := range 200 {
		if i > 0 {
			header.WriteString(",")
			row.WriteString(",")
		}
		fmt.Fprintf(&header, "%03d%s", i, strings.Repeat("h", 297))
		fmt.Fprintf(&row, "%d", i)
	}
	keys := "{\"a\":1}\n{\"a\":2}\n"
	for i := range 60 {
		keys += fmt.Sprintf("{%q:1}\n", fmt.Sprintf("%02d", i)+strings.Repeat("k", 64<<10))
	}
	var stored []string
	for _, data := range []string{
		header.String() + "\n" + row.String() + "\n" + row.String() + "\n",
		keys,
		"{\"a\":1}\n{\"a\":2}\n{\"a\":1" + strings.Repeat("0", 1<<20) + "}\n",
	} {
		r := spillString(t, e, "export", data)
		if r.Type == TypeText {
			t.Fatalf("%.40q… was detected as text", data)
		}
		stored = append(stored, r.ID)
	}
	wideCSV, wideJSONL, bigNumJSONL := stored[0], stored[1], stored[2]

	type tc struct {
		name string
		args map[string]any // marshalled; or raw
		raw  string
		// stored: the reply is about stored data, whose reading may
		// allocate in proportion to one row; only its size is checked.
		stored bool
	}
	cases := []tc{
		{name: "huge id", args: map[string]any{"id": huge, "op": "count"}},
		{name: "huge id with the prefix", args: map[string]any{"id": "res_" + huge, "op": "count"}},
		{name: "huge op", args: map[string]any{"id": csvID, "op": huge}},
		{name: "huge unit", args: map[string]any{"id": textID, "op": "slice", "unit": huge}},
		{name: "huge func", args: map[string]any{"id": csvID, "op": "aggregate", "column": "amount", "func": huge}},
		{name: "huge pattern", args: map[string]any{"id": textID, "op": "search", "pattern": "(" + huge}},
		{name: "longest bad pattern", args: map[string]any{"id": textID, "op": "search", "pattern": "(" + strings.Repeat("\\x00", maxPattern/4-1)}},
		{name: "longest pattern search", args: map[string]any{"id": textID, "op": "search", "pattern": "INFO|" + strings.Repeat("x", maxPattern-5)}},
		{name: "huge where column csv", args: map[string]any{"id": csvID, "op": "count", "where": where(huge, "eq", 1)}},
		{name: "huge where column json", args: map[string]any{"id": jsonID, "op": "count", "where": where(huge, "eq", 1)}},
		{name: "huge where op", args: map[string]any{"id": csvID, "op": "count", "where": where("amount", huge, 1)}},
		{name: "huge where value count", args: map[string]any{"id": csvID, "op": "count", "where": where("status", "ne", huge)}},
		{name: "huge where value aggregate", args: map[string]any{"id": jsonlID, "op": "aggregate", "column": "amount", "where": where("status", "ne", huge)}},
		{name: "huge where value rows past end", args: map[string]any{"id": csvID, "op": "rows", "offset": 1000, "where": where("status", "ne", huge)}},
		{name: "huge where value rows", args: map[string]any{"id": jsonID, "op": "rows", "where": where("status", "ne", huge)}},
		{name: "huge where number", raw: `{"id":"` + csvID + `","op":"count","where":[{"column":"amount","op":"gt","value":` + hugeNum + `}]}`},
		{name: "huge invalid where value", raw: `{"id":"` + csvID + `","op":"count","where":[{"column":"amount","op":"gt","value":"` + huge + `\x"}]}`},
		{name: "twenty 1 MiB where values", args: map[string]any{"id": csvID, "op": "count", "where": twenty("status", "ne", func(i int) any { return mb(i) })}},
		{name: "twenty 1 MiB where values rows", args: map[string]any{"id": jsonlID, "op": "rows", "limit": 5, "where": twenty("status", "ne", func(i int) any { return mb(i) })}},
		{name: "twenty 1 MiB where columns csv", args: map[string]any{"id": csvID, "op": "count", "where": twentyCols("eq")}},
		{name: "twenty 1 MiB where columns json", args: map[string]any{"id": jsonID, "op": "count", "where": twentyCols("ne")}},
		{name: "huge aggregate column csv", args: map[string]any{"id": csvID, "op": "aggregate", "column": huge}},
		{name: "huge aggregate column jsonl", args: map[string]any{"id": jsonlID, "op": "aggregate", "column": huge}},
		{name: "huge projected column csv", args: map[string]any{"id": csvID, "op": "rows", "columns": []string{huge}}},
		{name: "huge projected column json", args: map[string]any{"id": jsonID, "op": "rows", "columns": []string{huge}}},
		{name: "hundred 40 KiB projected columns", args: map[string]any{"id": jsonlID, "op": "rows", "limit": 50, "columns": hundredCols}},
		{name: "hundred 40 KiB projected columns to the end", args: map[string]any{"id": jsonlID, "op": "rows", "offset": 295, "columns": hundredCols}},
		{name: "huge unknown field", raw: `{"id":"` + csvID + `","op":"count","` + huge + `":1}`},
		{name: "huge offset number", raw: `{"id":"` + textID + `","op":"slice","offset":` + hugeNum + `}`},
		{name: "huge field of another op", raw: `{"id":"` + csvID + `","op":"count","pattern":"` + huge + `"}`},
		{name: "stored huge header, unknown column", args: map[string]any{"id": wideCSV, "op": "count", "where": where("nope", "eq", 1)}, stored: true},
		{name: "stored huge header, rows", args: map[string]any{"id": wideCSV, "op": "rows"}, stored: true},
		{name: "stored huge header, columns", args: map[string]any{"id": wideCSV, "op": "columns"}, stored: true},
		{name: "stored huge keys, unknown column", args: map[string]any{"id": wideJSONL, "op": "count", "where": where("nope", "eq", 1)}, stored: true},
		{name: "stored huge keys, columns", args: map[string]any{"id": wideJSONL, "op": "columns"}, stored: true},
		{name: "stored huge number", args: map[string]any{"id": bigNumJSONL, "op": "count"}, stored: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.raw)
			if c.args != nil {
				var err error
				if in, err = json.Marshal(c.args); err != nil {
					t.Fatal(err)
				}
			}
			var out string
			var err error
			alloc := allocated(func() { out, err = e.Read(t.Context(), in) })
			reply := out
			if err != nil {
				reply = err.Error()
			}
			if len(reply) > maxReply {
				t.Errorf("reply is %d bytes, over the %d-byte cap; it starts %.300q", len(reply), maxReply, reply)
			}
			// A bad value is quoted by a short prefix and its length, in an
			// error and in the head of a reply (rows below it are data, and
			// may show a projected column's name up to the row limit).
			said, _, _ := strings.Cut(reply, "\n")
			if err != nil {
				said = reply
			}
			if long := strings.Repeat("a", 2*quoteMax); strings.Contains(said, long) {
				t.Errorf("reply quotes a huge value at length: %.300q", said)
			}
			// Decoding a request copies its values about once (a where value
			// two or three times: the raw value, its text and, for a bad
			// number, strconv's error); quoting them must not add copies.
			// 8 MiB covers reading the small stored results (a search
			// buffer of 2 MiB, 1 MiB to verify a file written within the
			// second, compiling a pattern of the longest length allowed),
			// with room to spare: 4 MiB was seen to be too tight. Before
			// replies were bounded, such requests allocated 7 to 40 times
			// their size (28 MiB and more for the 4 MiB values here).
			if limit := 4*uint64(len(in)) + 8<<20; !c.stored && alloc > limit {
				t.Errorf("allocated %d MiB for a %d MiB request, want at most %d MiB", alloc>>20, len(in)>>20, limit>>20)
			}
			t.Logf("in %d KiB, alloc %d MiB, reply %d bytes (error %v): %.200q", len(in)>>10, alloc>>20, len(reply), err != nil, reply)
		})
	}
}
