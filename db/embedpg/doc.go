// Package embedpg runs a private PostgreSQL cluster from the PostgreSQL
// server binaries installed on the machine (initdb, pg_ctl, postgres).
//
// It is used by `workgraph serve` when no database URL is configured, and by
// the test harness when no PostgreSQL server is reachable. Nothing is
// downloaded: the binaries are located with [FindBinDir] and driven with
// os/exec.
//
// # Layout
//
// A cluster lives in one directory, Config.DataDir (default
// [DefaultDataDir]):
//
//	DataDir/data                 the PostgreSQL data directory (initdb -D)
//	DataDir/run                  the unix socket directory (.s.PGSQL.5432)
//	DataDir/log/postgresql.log   the server log (pg_ctl -l)
//	DataDir/embedpg.lock         an flock(2) lock serializing Start/Stop
//	                             across processes sharing DataDir
//	DataDir/owner.lock           an flock(2) lock held by the owning
//	                             process for its life (Config.Own); it
//	                             holds the owner's pid
//
// The server listens only on the unix socket in DataDir/run
// (listen_addresses is empty), with trust authentication for local
// connections as the superuser "postgres"; TCP connections are rejected by
// pg_hba.conf even if listen_addresses is changed. Anyone who can enter
// DataDir can connect as superuser, so DataDir is kept at mode 0700.
// Connect with the URL from [Cluster.URL], which pgx v5 (and libpq)
// understands.
//
// # Running as root
//
// PostgreSQL refuses to run as root. When the calling process is root,
// embedpg runs initdb, pg_ctl and the server as the "postgres" system user
// (created with useradd/adduser if it does not exist), chowns DataDir to it,
// and checks that every parent directory of DataDir is searchable by it. The
// default DataDir for root is therefore /var/lib/workgraph/pg rather than a
// path under /root.
//
// # Lifetime
//
// The server is started detached (pg_ctl puts it in its own session), so it
// outlives the Go process unless [Cluster.Stop] is called. A later [Start] on
// the same DataDir reuses a running server instead of failing, and recovers
// from a server that died (stale postmaster.pid, including a PID that was
// recycled by an unrelated process). Data survives Stop/Start.
//
// With Config.Own (as `workgraph serve` and `migrate` use it) the calling
// process is the one owner of DataDir until Stop or its death: a second
// owner is refused with an [OwnedError], and a server left running by a dead
// owner (the lock is free, postmaster.pid names a live postmaster) is
// adopted, and stopped by Stop, or restarted if it runs with other socket or
// durability settings. [Inspect] and [StopLeftover] serve `workgraph db
// status` and `workgraph db stop`. Without Own, processes share the server
// (the test harness's mode).
//
// Only unix-like systems are supported; on other systems [Start] returns an
// error.
package embedpg
