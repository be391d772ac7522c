// Package clients holds the clients of the workgraph API in the languages
// agents are written in, and their tests: typescript/ (types generated
// from api/openapi.json by openapi-typescript, requests through
// openapi-fetch) and python/ (the standard library only). The Go tests here
// run each client's end-to-end script against a real server and fail when
// api/openapi.json changes and a client's generated code does not (`make
// clients` regenerates both).
package clients
