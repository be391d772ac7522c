package db

import (
	"github.com/pressly/goose/v3/lock"
)

func newLocker() (lock.SessionLocker, error) {
	return lock.NewPostgresSessionLocker(lock.WithLockID(migrationLock))
}
