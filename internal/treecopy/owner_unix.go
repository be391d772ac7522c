//go:build unix

package treecopy

import (
	"os"
	"syscall"
)

// chown gives to the owner of the file info describes.
func chown(to string, info os.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Lchown(to, int(st.Uid), int(st.Gid))
}
