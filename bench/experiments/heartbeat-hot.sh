#!/bin/sh
# Heartbeat statement on three layouts of the leases table (see
# heartbeat-hot.sql), in alternating rounds on one cluster: heartbeats/s at
# 8 clients, WAL bytes per heartbeat, and the share of HOT updates.
# Usage: heartbeat-hot.sh 'host=127.0.0.1 port=5456 user=postgres dbname=hbexp' [rounds] [seconds]
set -e
conn=$1; rounds=${2:-3}; secs=${3:-15}
dir=$(dirname "$0")
PGBENCH=${PGBENCH:-pgbench}
psql "$conn" -q -v ON_ERROR_STOP=1 -f "$dir/heartbeat-hot.sql"
q() { psql "$conn" -Atc "$1"; }
for r in $(seq 1 "$rounds"); do
    for v in today side floor; do
        q "SELECT pg_stat_reset()" >/dev/null
        lsn0=$(q "SELECT pg_current_wal_lsn()")
        tps=$($PGBENCH -n -c 8 -j 2 -T "$secs" -f "$dir/hb_$v.pgbench" "$conn" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        lsn1=$(q "SELECT pg_current_wal_lsn()")
        sleep 1 # the statistics of the last transactions
        q "SELECT '$r', '$v', round($tps), round(pg_wal_lsn_diff('$lsn1', '$lsn0') / nullif(sum(n_tup_upd) FILTER (WHERE relname = 'hb_$v'), 0)) AS wal_bytes_per_hb,
                  string_agg(relname || ' upd=' || n_tup_upd || ' hot=' || n_tup_hot_upd, '; ')
           FROM pg_stat_user_tables WHERE relname LIKE 'hb_$v%'"
    done
done
