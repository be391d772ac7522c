#!/bin/bash
# PostgreSQL CPU of one claim + completion (ClaimItemDirect, then EndLease,
# the statements as db/dbq sends them) in copies of one benchmark database
# that differ in one thing each (ADR 0007, "the lean lease row, decided").
#
# Each variant runs in its own session, all variants at once, so that they
# share whatever load the machine has; the figure is the session's CPU
# (utime + stime of its backend, /proc/<pid>/stat) over N cycles, which a
# loaded machine disturbs far less than wall time.
#
# Usage: lease-cpu.sh HOST PORT TEMPLATE_DB [N] [ROUNDS]
#   TEMPLATE_DB: a database left by `go run ./bench -workloads 1 -agents 1
#   -keep -database-url ...` (its workload 1 project has ready items).
#   Needs to run on the database's machine (it reads /proc) as a user who
#   may read the backends' /proc entries (root, or the postgres user).
#   NAMES="as_is combined ..." runs those variants (default: the first five).
set -euo pipefail
host=$1 port=$2 tmpl=$3 n=${4:-500} rounds=${5:-3}
dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
psql() { command psql -h "$host" -p "$port" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

# The two statements' text, from the generated code.
for q in claimItemDirect endLease; do
    awk -v q="$q" '$0 ~ "^const " q " = `" {on=1; next} on && /^`/ {exit} on' \
        "$dir/db/dbq/lease.sql.go" > "$work/$q.sql"
done

project=$(psql -d "$tmpl" -Atc "SELECT project_id FROM items WHERE ready GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")

guard_when="DROP TRIGGER leases_immutable ON leases;
CREATE TRIGGER leases_immutable BEFORE UPDATE ON leases FOR EACH ROW
    WHEN (OLD.ended_at IS NOT NULL OR NEW.project_id <> OLD.project_id OR NEW.id <> OLD.id
          OR NEW.seq <> OLD.seq OR NEW.item_id <> OLD.item_id OR NEW.epoch <> OLD.epoch
          OR NEW.worker <> OLD.worker OR NEW.principal <> OLD.principal
          OR NEW.token_id IS DISTINCT FROM OLD.token_id OR NEW.acquired_at <> OLD.acquired_at)
    EXECUTE FUNCTION leases_guard();
CREATE TRIGGER leases_no_delete BEFORE DELETE ON leases FOR EACH ROW EXECUTE FUNCTION leases_guard();"
declare -A variant=(
    [as_is]=""
    # Four of the indexes every lease write touches (history pages' and
    # lookups' indexes): what a lease row written once would save.
    [four_indexes_fewer]="DROP INDEX leases_by_id, leases_by_acquired, leases_by_worker, leases_history;"
    [events_off]="ALTER TABLE leases DISABLE TRIGGER leases_event_granted, DISABLE TRIGGER leases_event_ended;
ALTER TABLE items DISABLE TRIGGER items_event_state;"
    [triggers_off]="ALTER TABLE leases DISABLE TRIGGER leases_event_granted, DISABLE TRIGGER leases_event_ended,
    DISABLE TRIGGER leases_count_ended, DISABLE TRIGGER leases_count_inserted_ended, DISABLE TRIGGER leases_immutable;
ALTER TABLE items DISABLE TRIGGER items_event_state;"
    # The immutability guard called only when an update would break it.
    [guard_when]="$guard_when"
)
# Ninth session: the claim's count of leases inserted already ended as a
# row trigger with a WHEN (none in a claim) instead of a statement trigger
# with a transition table; CHECK constraints moved into domains (a domain's
# check is kept parsed by the backend, a table's is parsed again at every
# statement that writes the table); the same checks dropped. items.status
# and items.title stay: a generated column and a trigger depend on them.
count_row="DROP TRIGGER leases_count_inserted_ended ON leases;
CREATE FUNCTION count_inserted_ended_lease() RETURNS trigger LANGUAGE plpgsql AS \$f\$
BEGIN
    INSERT INTO worker_outcome_counts AS c (project_id, worker, outcome, leases, last_seen)
    VALUES (NEW.project_id, NEW.worker, NEW.outcome, 1, greatest(NEW.acquired_at, NEW.heartbeat_at, NEW.ended_at))
    ON CONFLICT (project_id, worker, outcome) DO UPDATE
    SET leases = c.leases + 1, last_seen = greatest(c.last_seen, EXCLUDED.last_seen);
    RETURN NULL;
END \$f\$;
CREATE TRIGGER leases_count_inserted_ended AFTER INSERT ON leases FOR EACH ROW WHEN (NEW.ended_at IS NOT NULL)
    EXECUTE FUNCTION count_inserted_ended_lease();"
event_domains="CREATE DOMAIN wg_event_type AS text CHECK (VALUE ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+\$' AND length(VALUE) <= 64);
CREATE DOMAIN wg_actor AS text CHECK (length(VALUE) BETWEEN 1 AND 300);
CREATE DOMAIN wg_json_object AS jsonb CHECK (jsonb_typeof(VALUE) = 'object');
ALTER TABLE events DROP CONSTRAINT events_type_check, DROP CONSTRAINT events_actor_check, DROP CONSTRAINT events_payload_check,
  ALTER COLUMN type TYPE wg_event_type, ALTER COLUMN actor TYPE wg_actor, ALTER COLUMN payload TYPE wg_json_object;"
all_domains="$event_domains
CREATE DOMAIN wg_on_expiry AS text CHECK (VALUE IN ('retry','reconcile'));
CREATE DOMAIN wg_plan_key AS text CHECK (length(VALUE) BETWEEN 1 AND 200);
CREATE DOMAIN wg_worker AS text CHECK (length(VALUE) BETWEEN 1 AND 200);
CREATE DOMAIN wg_outcome AS text CHECK (VALUE IN ('completed','released','failed','cancelled','decomposed','attention_requested','expired'));
ALTER TABLE items DROP CONSTRAINT items_on_expiry_check, DROP CONSTRAINT items_plan_key_check,
  ALTER COLUMN on_expiry TYPE wg_on_expiry, ALTER COLUMN plan_key TYPE wg_plan_key;
ALTER TABLE leases DROP CONSTRAINT leases_outcome_check, DROP CONSTRAINT leases_worker_check,
  ALTER COLUMN outcome TYPE wg_outcome, ALTER COLUMN worker TYPE wg_worker;"
checks_off="ALTER TABLE events DROP CONSTRAINT events_type_check, DROP CONSTRAINT events_actor_check, DROP CONSTRAINT events_payload_check;
ALTER TABLE items DROP CONSTRAINT items_on_expiry_check, DROP CONSTRAINT items_plan_key_check;
ALTER TABLE leases DROP CONSTRAINT leases_outcome_check, DROP CONSTRAINT leases_worker_check;"
combined="$count_row
$all_domains"
variant[count_row]="$count_row"
variant[event_domains]="$event_domains"
variant[all_domains]="$all_domains"
variant[checks_off]="$checks_off"
variant[combined]="$combined"
# NAMES picks the variants, e.g. NAMES="as_is all_domains checks_off".
names=(${NAMES:-as_is four_indexes_fewer events_off triggers_off guard_when})
# The minimal pair of workload 1 (bench/minimal.go), in a database of its
# own, beside them: the floor the targets are measured against.
minimal="DROP TABLE IF EXISTS bench_minimal_queue;
CREATE TABLE bench_minimal_queue (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, state smallint NOT NULL DEFAULT 0,
    epoch bigint NOT NULL DEFAULT 0, worker text, expires_at timestamptz, result jsonb);
CREATE INDEX bench_minimal_queue_ready ON bench_minimal_queue (id) WHERE state = 0;
INSERT INTO bench_minimal_queue (state) SELECT 0 FROM generate_series(1, $(( (n + 20) * rounds )));"
psql -d postgres -c "DROP DATABASE IF EXISTS leasecpu_minimal" -c "CREATE DATABASE leasecpu_minimal"
psql -d leasecpu_minimal -c "$minimal" -c "VACUUM ANALYZE bench_minimal_queue"

for v in "${names[@]}"; do
    db="leasecpu_$v"
    psql -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db TEMPLATE $tmpl"
    [ -n "${variant[$v]}" ] && psql -d "$db" -c "${variant[$v]}"
    psql -d "$db" -c "VACUUM ANALYZE leases, items"
done

# One session's script: warm up, read the backend's CPU, N cycles, read it again.
cycle() {
    echo "SELECT gen_random_uuid() AS lid \\gset"
    echo "EXECUTE claim(NULL, '$project', '{}', 'w1', NULL, 0, NULL, :'lid', 'p', 60000) \\g /dev/null"
    echo "SELECT epoch AS ep FROM leases WHERE project_id = '$project' AND id = :'lid' \\gset"
    echo "EXECUTE endl(NULL, 'completed', NULL, '{}', NULL, 0, 0, 0, 0, '$project', :'lid', :ep, true, false, 0, 0, true, false) \\g /dev/null"
}
{
    echo "SET synchronous_commit = off;"
    echo "SELECT pg_backend_pid() AS bpid \\gset"
    echo "\\setenv BPID :bpid"
    echo "PREPARE claim(timestamptz, uuid, text[], text, uuid, int, text[], uuid, text, bigint) AS"
    cat "$work/claimItemDirect.sql"; echo ";"
    echo "PREPARE endl(timestamptz, text, jsonb, jsonb, timestamptz, bigint, bigint, bigint, bigint, uuid, uuid, bigint, boolean, boolean, bigint, bigint, boolean, boolean) AS"
    cat "$work/endLease.sql"; echo ";"
    for _ in $(seq 1 20); do cycle; done
    echo "\\! awk '{print \"cpu0\", \$14 + \$15}' /proc/\$BPID/stat"
    for _ in $(seq 1 "$n"); do cycle; done
    echo "\\! awk '{print \"cpu1\", \$14 + \$15}' /proc/\$BPID/stat"
} > "$work/cycles.sql"
{
    echo "SET synchronous_commit = off;"
    echo "SELECT pg_backend_pid() AS bpid \\gset"
    echo "\\setenv BPID :bpid"
    m_cycle() {
        echo "UPDATE bench_minimal_queue SET state = 1, epoch = epoch + 1, worker = 'w1', expires_at = now() + interval '15 minutes' WHERE id = (SELECT id FROM bench_minimal_queue WHERE state = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id AS mid, epoch AS mep \\gset"
        echo "UPDATE bench_minimal_queue SET state = 2, result = '{\"ok\":true}' WHERE id = :mid AND epoch = :mep AND state = 1 AND expires_at > now();"
    }
    for _ in $(seq 1 20); do m_cycle; done
    echo "\\! awk '{print \"cpu0\", \$14 + \$15}' /proc/\$BPID/stat"
    for _ in $(seq 1 "$n"); do m_cycle; done
    echo "\\! awk '{print \"cpu1\", \$14 + \$15}' /proc/\$BPID/stat"
} > "$work/minimal.sql"

ticks=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
    for v in "${names[@]}"; do
        psql -d "leasecpu_$v" -f "$work/cycles.sql" > "$work/$v.out" &
    done
    psql -d leasecpu_minimal -f "$work/minimal.sql" > "$work/minimal.out" &
    wait
    for v in "${names[@]}" minimal; do
        awk -v r="$r" -v v="$v" -v n="$n" -v hz="$ticks" '/^cpu0/ {a = $2} /^cpu1/ {b = $2}
            END {printf "round %s  %-20s %.3f ms of CPU per claim + completion\n", r, v, (b - a) * 1000 / hz / n}' "$work/$v.out"
    done
done
