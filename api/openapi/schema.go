package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Keywords are the JSON Schema keywords the validator understands:
// assertions it checks and annotations it ignores.
var Keywords = map[string]bool{
	"$ref": true, "type": true, "enum": true, "const": true, "format": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true,
	"oneOf": true, "anyOf": true, "allOf": true,
	// annotations
	"description": true, "default": true, "title": true, "examples": true, "deprecated": true,
}

// checkKeywords refuses a schema (and the schemas inside it) that uses a
// keyword the validator does not implement.
func checkKeywords(s any, at string) error {
	m, ok := s.(map[string]any)
	if !ok {
		if _, isBool := s.(bool); isBool {
			return nil
		}
		return fmt.Errorf("%s: a schema must be an object or a boolean, got %T", at, s)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !Keywords[k] {
			return fmt.Errorf("%s: keyword %q is not implemented by the validator", at, k)
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for name, sub := range p {
			if err := checkKeywords(sub, at+"/properties/"+name); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := m[k]; ok {
			if err := checkKeywords(sub, at+"/"+k); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if l, ok := m[k].([]any); ok {
			for i, sub := range l {
				if err := checkKeywords(sub, fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
					return err
				}
			}
		}
	}
	if p, ok := m["pattern"].(string); ok {
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Errorf("%s: pattern: %v", at, err)
		}
	}
	return nil
}

// validate checks value (decoded with json.Number) against schema; at is
// the JSON pointer of value in the answer, for the error.
func (d *Document) validate(schema, value any, at string) error {
	switch s := schema.(type) {
	case bool:
		if !s {
			return fmt.Errorf("%s: no value is allowed here", orRoot(at))
		}
		return nil
	case map[string]any:
		return d.validateObject(s, value, at)
	default:
		return fmt.Errorf("%s: schema is %T", orRoot(at), schema)
	}
}

func orRoot(at string) string {
	if at == "" {
		return "(body)"
	}
	return at
}

func (d *Document) validateObject(s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		target, err := d.resolve(ref)
		if err != nil {
			return err
		}
		if err := d.validate(target, v, at); err != nil {
			return err
		}
	}
	if t, ok := s["type"]; ok {
		if err := checkType(t, v, at); err != nil {
			return err
		}
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, c := range e {
			found = found || equal(c, v)
		}
		if !found {
			return fmt.Errorf("%s: %s is not one of %s", orRoot(at), show(v), show(e))
		}
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s: %s is not %s", orRoot(at), show(v), show(c))
	}
	switch x := v.(type) {
	case string:
		if err := checkString(s, x, at); err != nil {
			return err
		}
	case json.Number:
		if err := checkNumber(s, x, at); err != nil {
			return err
		}
	case []any:
		if err := d.checkArray(s, x, at); err != nil {
			return err
		}
	case map[string]any:
		if err := d.checkMembers(s, x, at); err != nil {
			return err
		}
	}
	return d.checkCombinators(s, v, at)
}

func (d *Document) checkCombinators(s map[string]any, v any, at string) error {
	if l, ok := s["allOf"].([]any); ok {
		for _, sub := range l {
			if err := d.validate(sub, v, at); err != nil {
				return err
			}
		}
	}
	if l, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, sub := range l {
			err := d.validate(sub, v, at)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err.Error())
		}
		if errs != nil {
			return fmt.Errorf("%s: matches none of anyOf: %s", orRoot(at), strings.Join(errs, "; "))
		}
	}
	if l, ok := s["oneOf"].([]any); ok {
		matched := 0
		var errs []string
		for _, sub := range l {
			if err := d.validate(sub, v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want exactly 1: %s", orRoot(at), matched, strings.Join(errs, "; "))
		}
	}
	return nil
}

func checkType(t, v any, at string) error {
	var names []string
	switch x := t.(type) {
	case string:
		names = []string{x}
	case []any:
		for _, n := range x {
			s, _ := n.(string)
			names = append(names, s)
		}
	}
	for _, n := range names {
		if hasType(n, v) {
			return nil
		}
	}
	return fmt.Errorf("%s: %s is %s, want %s", orRoot(at), show(v), typeOf(v), strings.Join(names, " or "))
}

func hasType(name string, v any) bool {
	switch name {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		r, ok := new(big.Rat).SetString(n.String())
		return ok && r.IsInt()
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func checkString(s map[string]any, x, at string) error {
	n := utf8.RuneCountInString(x)
	if m, ok := number(s["minLength"]); ok && float64(n) < m {
		return fmt.Errorf("%s: %q is shorter than %v characters", orRoot(at), x, m)
	}
	if m, ok := number(s["maxLength"]); ok && float64(n) > m {
		return fmt.Errorf("%s: a string of %d characters is longer than %v", orRoot(at), n, m)
	}
	if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
		return fmt.Errorf("%s: %q does not match %s", orRoot(at), x, p)
	}
	switch s["format"] {
	case "uuid":
		if len(x) != 36 || uuid.Validate(x) != nil {
			return fmt.Errorf("%s: %q is not a uuid", orRoot(at), x)
		}
	case "date-time":
		// The server answers every time in one form: RFC 3339 in UTC,
		// "Z" (docs/api.md, Events).
		if _, err := time.Parse(time.RFC3339Nano, x); err != nil || !strings.HasSuffix(x, "Z") {
			return fmt.Errorf("%s: %q is not an RFC 3339 date-time in UTC (Z)", orRoot(at), x)
		}
	}
	return nil
}

func checkNumber(s map[string]any, x json.Number, at string) error {
	f, err := x.Float64()
	if err != nil {
		return fmt.Errorf("%s: %s: %v", orRoot(at), x, err)
	}
	if m, ok := number(s["minimum"]); ok && f < m {
		return fmt.Errorf("%s: %s is below the minimum %v", orRoot(at), x, m)
	}
	if m, ok := number(s["maximum"]); ok && f > m {
		return fmt.Errorf("%s: %s is above the maximum %v", orRoot(at), x, m)
	}
	return nil
}

func (d *Document) checkArray(s map[string]any, x []any, at string) error {
	if m, ok := number(s["minItems"]); ok && float64(len(x)) < m {
		return fmt.Errorf("%s: %d items, want at least %v", orRoot(at), len(x), m)
	}
	if m, ok := number(s["maxItems"]); ok && float64(len(x)) > m {
		return fmt.Errorf("%s: %d items, want at most %v", orRoot(at), len(x), m)
	}
	if items, ok := s["items"]; ok {
		for i, e := range x {
			if err := d.validate(items, e, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *Document) checkMembers(s map[string]any, x map[string]any, at string) error {
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, _ := r.(string)
			if _, ok := x[name]; !ok {
				return fmt.Errorf("%s: required member %q is missing", orRoot(at), name)
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(x))
	for k := range x {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if sub, ok := props[k]; ok {
			if err := d.validate(sub, x[k], at+"/"+k); err != nil {
				return err
			}
			continue
		}
		if ap, ok := s["additionalProperties"]; ok {
			if b, isBool := ap.(bool); isBool && !b {
				return fmt.Errorf("%s: member %q is not documented", orRoot(at), k)
			}
			if err := d.validate(ap, x[k], at+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// number reads a numeric keyword of the document (decoded with
// json.Number).
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// equal compares two decoded JSON values.
func equal(a, b any) bool {
	ja, err1 := json.Marshal(canonical(a))
	jb, err2 := json.Marshal(canonical(b))
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// canonical turns numbers into exact rationals' strings so 1 and 1.0 are
// equal; maps marshal with sorted keys already.
func canonical(v any) any {
	switch x := v.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(x.String()); ok {
			return "\x00number:" + r.RatString()
		}
		return "\x00number:" + x.String()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonical(e)
		}
		return out
	}
	return v
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
