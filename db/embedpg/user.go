package embedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// serverUser is the system account the server runs as when the caller is
// root (PostgreSQL refuses to run as root).
const serverUser = "postgres"

// sysUser is the account that initdb, pg_ctl and postgres run as, when that
// differs from the calling process (i.e. the caller is root).
type sysUser struct {
	name     string
	uid, gid uint32
}

// lookupOrCreateUser returns the system user name (serverUser outside
// tests), creating it if it does not exist.
func lookupOrCreateUser(ctx context.Context, name string, logf func(string, ...any)) (*sysUser, error) {
	u, err := lookupSysUser(name)
	if err == nil {
		return u, nil
	}
	var unknown user.UnknownUserError
	if !errors.As(err, &unknown) {
		return nil, fmt.Errorf("embedpg: look up user %q: %w", name, err)
	}
	logf("creating system user", "user", name)
	// Try the usual tools in turn; another process may be creating the user
	// concurrently, so re-check after each attempt.
	attempts := [][]string{
		{"useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name},
		{"adduser", "--system", "--group", "--no-create-home", "--home", "/nonexistent", name},
		// BusyBox (Alpine).
		{"adduser", "-S", "-D", "-H", "-h", "/nonexistent", "-s", "/sbin/nologin", name},
	}
	var msgs []string
	for _, argv := range attempts {
		path := lookPathIn(argv[0], os.Getenv("PATH")+string(filepath.ListSeparator)+"/usr/sbin:/sbin:/usr/bin:/bin")
		if path == "" {
			msgs = append(msgs, argv[0]+": not found")
			continue
		}
		out, err := exec.CommandContext(ctx, path, argv[1:]...).CombinedOutput()
		if u, lerr := lookupSysUser(name); lerr == nil {
			return u, nil
		}
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out))))
		}
	}
	return nil, fmt.Errorf("embedpg: running as root, PostgreSQL needs an unprivileged %q system user, and creating it failed (%s); "+
		"create it yourself (useradd --system --user-group %s) or set WORKGRAPH_DATABASE_URL to an existing server",
		name, strings.Join(msgs, "; "), name)
}

func lookupSysUser(name string) (*sysUser, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("embedpg: user %q has non-numeric uid %q", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("embedpg: user %q has non-numeric gid %q", name, u.Gid)
	}
	if uid == 0 {
		return nil, fmt.Errorf("embedpg: user %q has uid 0; PostgreSQL cannot run as root", name)
	}
	return &sysUser{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// checkReachable verifies that u can search (x permission) every ancestor of
// dir, which must be absolute and clean. Only permission bits are
// considered (not ACLs), with the same primary-group-only credentials that
// setCredential gives the child processes.
func checkReachable(dir string, u *sysUser) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("embedpg: %w", err)
		}
		uid, gid, ok := fileOwner(fi)
		if ok {
			perm := fi.Mode().Perm()
			var can bool
			switch {
			case uid == u.uid:
				can = perm&0o100 != 0
			case gid == u.gid:
				can = perm&0o010 != 0
			default:
				can = perm&0o001 != 0
			}
			if !can {
				return fmt.Errorf("embedpg: data dir %s is not reachable by the %s user: %s (mode %v, owner uid %d) does not let it enter; "+
					"set %s to a path outside it (e.g. /var/lib/workgraph) or make it searchable (chmod o+x %s)",
					dir, u.name, p, fi.Mode().Perm(), uid, EnvDataDir, p)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
