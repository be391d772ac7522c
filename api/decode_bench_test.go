package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/input"
)

// benchPlan is a plan body of n items, each with two children, labels,
// a body and dependencies: the largest kind of body the API decodes.
func benchPlan(n int) []byte {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"key": fmt.Sprintf("k%d", i), "title": fmt.Sprintf("Item %d: caf\u00e9 and a longer title", i),
			"body": strings.Repeat("Some markdown text. ", 10), "priority": i % 7, "labels": []string{"go", "db"},
			"children": []map[string]any{
				{"key": fmt.Sprintf("k%d.a", i), "title": "first part"},
				{"key": fmt.Sprintf("k%d.b", i), "title": "second part", "depends_on": []string{fmt.Sprintf("k%d.a", i)}},
			},
		}
		if i > 0 {
			items[i]["depends_on"] = []string{fmt.Sprintf("k%d", i-1)}
		}
	}
	b, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkDecode measures decodeBody on a small item and on plans of 100
// and 1,000 items; walk and decode are its two passes alone. The three
// passes it replaced were measured against it in one binary at
// 8f7f598 (docs/benchmarks-record.md, "Decoding a request body"); to measure them
// again, check out that commit's parent and run the same command.
func BenchmarkDecode(b *testing.B) {
	bodies := []struct {
		name string
		body []byte
		into func() any
	}{
		{"Item", []byte(`{"title": "Write the docs", "body": "At length.", "priority": 3, "labels": ["docs"], "metadata": {"owner": "ann"}}`),
			func() any { return new(createItemRequest) }},
		{"Plan100", benchPlan(100), func() any { return new(planRequest) }},
		{"Plan1000", benchPlan(1000), func() any { return new(planRequest) }},
	}
	for _, bb := range bodies {
		if err := decodeBody(bb.body, bb.into()); err != nil {
			b.Fatalf("%s: %v", bb.name, err)
		}
		for _, impl := range []struct {
			name string
			f    func([]byte, any) error
		}{{"now", decodeBody},
			// The two parts of now: the walk of input.JSONInto, and
			// encoding/json's decode.
			{"walk", func(body []byte, v any) error { return input.JSONInto(body, reflect.TypeOf(v)) }},
			{"decode", func(body []byte, v any) error { return json.Unmarshal(body, v) }}} {
			b.Run(bb.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.f(bb.body, bb.into()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
