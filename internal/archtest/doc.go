// Package archtest holds the import rules of the module, in one list
// (Rules), and the checker that enforces them on the real import graph
// (its test runs `go list`). A rule names the packages it applies to and
// the packages they must not import, directly or, for a transitive rule,
// through any chain of imports. Test files are not checked: tests may
// reach the database harness (db/dbtest).
package archtest
