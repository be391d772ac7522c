package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Document is a loaded OpenAPI document.
type Document struct {
	root any
	ops  []Operation
}

// Operation is one method of one documented path.
type Operation struct {
	Method string // upper case
	Path   string // the template, e.g. /v1/leases/{id}
	ID     string // operationId
	// Responses maps a status ("200", "4XX", "default") to its response
	// object, $ref resolved.
	Responses map[string]Response
	// Request is the request body's media types and schemas (empty when
	// the operation takes no body).
	Request  Response
	segments []string
}

// Response is one documented response: its media types and their schemas
// (a media type without a schema maps to nil).
type Response struct {
	Content map[string]any
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Load parses an OpenAPI 3.1 document and checks that every schema in it
// uses only the keywords the validator implements.
func Load(data []byte) (*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	d := &Document{root: root}
	if comps, ok := root["components"].(map[string]any); ok {
		schemas, _ := comps["schemas"].(map[string]any)
		for name, s := range schemas {
			if err := checkKeywords(s, "#/components/schemas/"+name); err != nil {
				return nil, fmt.Errorf("openapi: %w", err)
			}
		}
	}
	paths, _ := root["paths"].(map[string]any)
	for path, v := range paths {
		item, _ := v.(map[string]any)
		for _, m := range methods {
			raw, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op, err := d.operation(strings.ToUpper(m), path, raw)
			if err != nil {
				return nil, err
			}
			d.ops = append(d.ops, op)
		}
	}
	sort.Slice(d.ops, func(i, j int) bool {
		if d.ops[i].Path != d.ops[j].Path {
			return d.ops[i].Path < d.ops[j].Path
		}
		return d.ops[i].Method < d.ops[j].Method
	})
	return d, nil
}

func (d *Document) operation(method, path string, raw map[string]any) (Operation, error) {
	op := Operation{Method: method, Path: path, Responses: map[string]Response{}, segments: strings.Split(path, "/")}
	op.ID, _ = raw["operationId"].(string)
	if rb, ok := raw["requestBody"].(map[string]any); ok {
		op.Request = Response{Content: map[string]any{}}
		content, _ := rb["content"].(map[string]any)
		for mt, v := range content {
			media, _ := v.(map[string]any)
			schema := media["schema"]
			if err := checkKeywords(schema, fmt.Sprintf("%s %s request %s", method, path, mt)); schema != nil && err != nil {
				return op, fmt.Errorf("openapi: %w", err)
			}
			op.Request.Content[mt] = schema
		}
	}
	rs, _ := raw["responses"].(map[string]any)
	for status, r := range rs {
		at := fmt.Sprintf("%s %s response %s", method, path, status)
		for {
			m, _ := r.(map[string]any)
			ref, ok := m["$ref"].(string)
			if !ok {
				break
			}
			var err error
			if r, err = d.resolve(ref); err != nil {
				return op, fmt.Errorf("openapi: %s: %w", at, err)
			}
		}
		m, _ := r.(map[string]any)
		resp := Response{Content: map[string]any{}}
		content, _ := m["content"].(map[string]any)
		for mt, v := range content {
			media, _ := v.(map[string]any)
			schema, ok := media["schema"]
			if ok {
				if err := checkKeywords(schema, at+" "+mt); err != nil {
					return op, fmt.Errorf("openapi: %w", err)
				}
			}
			resp.Content[mt] = schema
		}
		op.Responses[status] = resp
	}
	return op, nil
}

// Operations lists the documented operations, by path and method.
func (d *Document) Operations() []Operation { return d.ops }

// resolve follows a local $ref ("#/components/schemas/Item").
func (d *Document) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only local references are supported", ref)
	}
	cur := d.root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

// Find returns the operation that serves method and path (a request path,
// without its query). A literal segment beats a parameter, so
// /v1/projects/{project}/items/{id} and a literal /items/x/graph never
// shadow each other.
func (d *Document) Find(method, path string) (Operation, bool) {
	segs := strings.Split(path, "/")
	best, bestLiterals := -1, -1
	for i, op := range d.ops {
		if op.Method != method || len(op.segments) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for j, s := range op.segments {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				ok = ok && segs[j] != ""
			case s == segs[j]:
				literals++
			default:
				ok = false
			}
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = i, literals
		}
	}
	if best < 0 {
		return Operation{}, false
	}
	return d.ops[best], true
}

// Response returns the documented response for status: the exact code,
// else its class ("4XX"), else "default".
func (op Operation) Response(status int) (Response, bool) {
	code := strconv.Itoa(status)
	for _, k := range []string{code, code[:1] + "XX", "default"} {
		if r, ok := op.Responses[k]; ok {
			return r, true
		}
	}
	return Response{}, false
}

// CheckResponse reports how an answer differs from the document: a method
// and path it does not document, a status the operation does not list, a
// content type it does not list for that status, or a body that does not
// validate against the response's schema. A response documented without
// content must have an empty body.
func (d *Document) CheckResponse(method, path string, status int, header http.Header, body []byte) error {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	op, ok := d.Find(method, path)
	if !ok {
		return d.checkUnrouted(method, path, status, header, body)
	}
	name := fmt.Sprintf("%s %s (%s) answered %d", method, path, op.ID, status)
	r, ok := op.Response(status)
	if !ok {
		return fmt.Errorf("%s, which the document does not list", name)
	}
	return d.checkContent(name, r, header, body)
}

// CheckRequest reports how a request body differs from the operation's
// documented requestBody. It is meant for requests the server accepted: a
// body the server took that the document does not allow means one of them
// is wrong.
func (d *Document) CheckRequest(method, path string, header http.Header, body []byte) error {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	op, ok := d.Find(method, path)
	if !ok {
		return fmt.Errorf("%s %s is not a documented operation", method, path)
	}
	name := fmt.Sprintf("%s %s (%s) request", method, path, op.ID)
	if len(op.Request.Content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s has a body, where the document has none", name)
		}
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // an empty body is {} (every body member is optional or refused)
	}
	return d.checkContent(name, op.Request, header, body)
}

// checkUnrouted checks the answer to a request no operation serves: 405
// method_not_allowed when the path is documented with other methods, else
// 404 not_found, each a problem as components/responses/Problem documents.
func (d *Document) checkUnrouted(method, path string, status int, header http.Header, body []byte) error {
	want := http.StatusNotFound
	for _, m := range methods {
		if _, ok := d.Find(strings.ToUpper(m), path); ok {
			want = http.StatusMethodNotAllowed
		}
	}
	name := fmt.Sprintf("%s %s (no operation) answered %d", method, path, status)
	if status != want {
		return fmt.Errorf("%s, want %d", name, want)
	}
	raw, err := d.resolve("#/components/responses/Problem")
	if err != nil {
		return err
	}
	problem, _ := raw.(map[string]any)
	content, _ := problem["content"].(map[string]any)
	r := Response{Content: map[string]any{}}
	for mt, v := range content {
		media, _ := v.(map[string]any)
		r.Content[mt] = media["schema"]
	}
	return d.checkContent(name, r, header, body)
}

// checkContent checks an answer's content type and body against one
// documented response.
func (d *Document) checkContent(name string, r Response, header http.Header, body []byte) error {
	if len(r.Content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("%s with a body, where the document has none: %.200s", name, body)
		}
		return nil
	}
	ct := header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("%s with Content-Type %q: %v", name, ct, err)
	}
	schema, ok := r.Content[mt]
	if !ok {
		return fmt.Errorf("%s with Content-Type %q, which the document does not list for it", name, mt)
	}
	if schema == nil || !strings.HasSuffix(mt, "json") {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s with a body that is not JSON: %v", name, err)
	}
	if dec.More() {
		return fmt.Errorf("%s with more than one JSON value", name)
	}
	if err := d.validate(schema, v, ""); err != nil {
		return fmt.Errorf("%s: %w: %.300s", name, err, body)
	}
	return nil
}

// CheckSchema validates a JSON document against one schema of
// components/schemas (e.g. "AttentionPage"): for output that claims to be
// in the API's shape without being an HTTP answer, such as the CLI's
// --json.
func (d *Document) CheckSchema(name string, body []byte) error {
	schema, err := d.resolve("#/components/schemas/" + name)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := d.validate(schema, v, ""); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
