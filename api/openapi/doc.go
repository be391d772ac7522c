// Package openapi reads the API's OpenAPI 3.1 document and checks HTTP
// answers against it: the operation a request reached, the response its
// status documents, the content type and the body's JSON Schema.
//
// The validator implements the JSON Schema keywords the document uses
// (Keywords lists them); a schema with any other keyword is refused when
// the document is loaded, so a keyword is never silently ignored.
package openapi
