// Package wire holds the JSON shapes of the API's answers: one Go type per
// schema of api/openapi.json, written once and used by the server (api
// converts domain values into them) and by the Go client (which decodes
// into them). It imports no database or domain package.
//
// Ids are strings and states, outcomes and roles are plain strings: the
// client passes them along as it got them, and the server, which owns
// their meaning, converts from its own types. A member the document
// requires is never omitted; a member that may be null is a pointer (or
// json.RawMessage holding "null").
package wire
