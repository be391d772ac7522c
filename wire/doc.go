// Package wire holds the JSON shapes of the API: one Go type per schema of
// api/openapi.json, answers and request bodies, written once. The server
// encodes its answers in them (api converts domain values into them) and
// the Go client decodes them and sends the request types. It imports no
// database or domain package. Tests check each type against its schema,
// and the server's request decoders against the request types.
//
// Ids are strings and states, outcomes and roles are plain strings: the
// client passes them along as it got them, and the server, which owns
// their meaning, converts from its own types. A member the document
// requires is never omitted; a member that may be null is a pointer (or
// json.RawMessage holding "null").
package wire
