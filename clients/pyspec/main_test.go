package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSpecCurrent fails when api/openapi.json changed and the Python
// client's generated module was not regenerated (`make clients`).
func TestSpecCurrent(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", defaultDoc))
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join("..", "..", defaultOut))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("%s is stale: api/openapi.json changed and the module was not regenerated (run `make clients` and commit the result)", defaultOut)
	}
}

// TestPyType: the annotations of the schema shapes the document uses.
func TestPyType(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		schema string
		want   string
	}{
		"Ref":            {`{"$ref": "#/components/schemas/Lease"}`, "Lease"},
		"NullableString": {`{"type": ["string", "null"]}`, "Optional[str]"},
		"Enum":           {`{"type": "string", "enum": ["open", "resolved"]}`, `Literal["open", "resolved"]`},
		"ArrayOfRefs":    {`{"type": "array", "items": {"$ref": "#/x/Item"}}`, "List[Item]"},
		"Object":         {`{"type": "object", "additionalProperties": true}`, "Dict[str, Any]"},
		"AnyValue":       {`{"description": "any JSON value"}`, "Any"},
		"NullableRef":    {`{"oneOf": [{"$ref": "#/x/Outcome"}, {"type": "null"}]}`, "Optional[Outcome]"},
		"OneOf":          {`{"oneOf": [{"type": "string"}, {"type": "object"}]}`, "Union[str, Dict[str, Any]]"},
		"OneOfAny":       {`{"oneOf": [{"type": "string"}, {}]}`, "Any"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var s schema
			if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
				t.Fatal(err)
			}
			if got := pyType(&s); got != tt.want {
				t.Fatalf("pyType(%s) = %s, want %s", tt.schema, got, tt.want)
			}
		})
	}
}

// TestGenerateNeedsOperationIDs: an operation without an operationId has
// no name in OPERATIONS, so the generator refuses the document.
func TestGenerateNeedsOperationIDs(t *testing.T) {
	t.Parallel()
	doc := `{"paths": {"/v1/x": {"get": {"summary": "no id"}}}, "components": {"schemas": {"Problem": {"properties": {"code": {"enum": ["internal"]}}}}}}`
	if _, err := generate([]byte(doc)); err == nil {
		t.Fatal("a document with an operation without operationId was accepted")
	}
}

// TestAliasAfterItsSchemas: an alias is evaluated when the module is
// imported, so one that names a TypedDict (or another such alias) comes
// after it, whatever the names' order.
func TestAliasAfterItsSchemas(t *testing.T) {
	t.Parallel()
	doc := `{"paths": {"/v1/x": {"get": {"operationId": "getX"}}}, "components": {"schemas": {
		"Problem": {"properties": {"code": {"enum": ["internal"]}}},
		"AList": {"type": "array", "items": {"$ref": "#/components/schemas/BItem"}},
		"AAList": {"type": "array", "items": {"$ref": "#/components/schemas/AList"}},
		"BItem": {"properties": {"x": {"type": "string"}}},
		"Plain": {"type": "string"}}}}`
	out, err := generate([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int {
		i := bytes.Index(out, []byte(s))
		if i < 0 {
			t.Fatalf("no %q in:\n%s", s, out)
		}
		return i
	}
	if !(at("class BItem(") < at("AList = List[BItem]") && at("AList = List[BItem]") < at("AAList = List[AList]")) {
		t.Errorf("aliases before the schemas they name:\n%s", out)
	}
	if at("Plain = str") > at("class BItem(") {
		t.Errorf("an alias naming no schema should come first:\n%s", out)
	}
}
