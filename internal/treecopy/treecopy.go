// Package treecopy copies a folder of directories and regular files,
// keeping their modes and, as root, their owners: what tests that start a
// PostgreSQL cluster from a copy of a stopped one need (the files of a
// cluster started by root belong to the user it runs as).
package treecopy

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Copy copies the folder src to dst, which must not exist or be an empty
// directory. keep, when not nil, is asked for each path below src
// (relative to it): a directory it refuses is skipped whole. Anything but
// directories and regular files is an error.
func Copy(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel != "." && keep != nil && !keep(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.MkdirAll(to, info.Mode().Perm())
			if err == nil {
				err = os.Chmod(to, info.Mode().Perm())
			}
		case info.Mode().IsRegular():
			err = copyFile(p, to, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: neither a directory nor a regular file", p)
		}
		if err == nil && os.Geteuid() == 0 {
			err = chown(to, info)
		}
		return err
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
