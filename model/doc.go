// Package model holds the Promela model of the claim protocol
// (lease.pml) and the script that checks it with spin (check.sh, run by
// make model and in CI). It has no Go code of its own: its test runs the
// check when spin and a C compiler are installed.
package model
