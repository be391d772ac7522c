package pgbouncer

import "syscall"

// procAttr makes PgBouncer end with the process that started it, even when
// that one is killed (a test binary at its timeout) and Stop never runs.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
