//go:build !linux

package pgbouncer

import "syscall"

// procAttr: without Linux's parent-death signal, a PgBouncer whose starter
// was killed before Stop keeps running.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
