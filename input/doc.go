// Package input owns the checks every piece of text arriving from outside
// (request bodies, query and path parameters, form values, headers) passes
// once, where it is decoded, before any of it reaches a service or the
// database: text is valid UTF-8 without NUL (PostgreSQL's text refuses
// both), and raw JSON kept as it came (metadata, results, progress) is also
// free of "\u0000" escapes, unpaired surrogate escapes and numbers outside
// what jsonb's numeric can hold (PostgreSQL's jsonb refuses those).
// JSONInto also checks a request body's shape against the Go type it is
// decoded into, in the same walk: keys exactly the type's members (an
// unknown one named by its whole path), and null only where the member
// takes it. Line and Prose say which characters a single-line and a
// multi-line text that people read may hold (no control characters, no
// bidirectional overrides, no invisible tag characters); the domain
// packages call them, so every path that stores such text refuses alike.
//
// A refused value is a wgerr invalid_argument error naming the field, so
// the API answers 400 and the web UI its error page, and nothing changes.
package input
