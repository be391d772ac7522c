//go:build !unix

package embedpg

import (
	"context"
	"errors"
	"os"
	"os/exec"
)

const supported = false

func setCredential(*exec.Cmd, *sysUser) {}

func lockFile(context.Context, string) (func(), error) {
	return nil, errors.New("embedpg: not supported on this operating system")
}

func tryLock(*os.File, bool) (bool, error) {
	return false, errors.New("embedpg: not supported on this operating system")
}

func unlock(*os.File) {}

func processAlive(int) bool { return false }

func processCwd(int) (string, bool) { return "", false }

func fileOwner(os.FileInfo) (uint32, uint32, bool) { return 0, 0, false }
