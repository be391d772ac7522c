// Package acceptance is the black-box acceptance suite of the REST API v1.
//
// Its tests are written from the contract in the issue texts alone (issues
// 3, 4, 5 and 6), not from the server's code: they boot the real server on
// port 0 against a fresh PostgreSQL database and talk to it with net/http
// and encoding/json only, never through the client or api packages. Where
// a test needs to know what was stored, it reads the database directly.
package acceptance
