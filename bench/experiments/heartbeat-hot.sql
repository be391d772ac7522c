-- The lean lease row (issue 15, docs/adr/0007-lean-hot-path.md): the
-- heartbeat's statement on three layouts of a leases table, for
-- heartbeat-hot.sh. Run in a scratch database made of the project's
-- schema (its functions and the leases_guard trigger). Each table has the
-- columns, checks and indexes of leases, 100,000 ended leases and 1,000
-- live ones:
--   hb_today: as leases is (expires_at is a key of its live-expiry index);
--   hb_side:  the live expiry in a narrow side table hb_side_live
--             (project_id, lease_id, expires_at) with its own index; the
--             lease row keeps an unindexed copy of expires_at; fillfactor 80;
--   hb_floor: the live-expiry index on a column due_at <= expires_at that a
--             heartbeat moves only when it is within half a TTL of now;
--             fillfactor 80.
SET client_min_messages = warning;
DROP TABLE IF EXISTS hb_today, hb_side, hb_side_live, hb_floor, hb_ids;
CREATE TABLE hb_today (LIKE leases INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING INDEXES);
CREATE TABLE hb_side (LIKE leases INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING INDEXES) WITH (fillfactor = 80);
CREATE TABLE hb_floor (LIKE leases INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS INCLUDING INDEXES) WITH (fillfactor = 80);
ALTER TABLE hb_floor ADD COLUMN due_at timestamptz;
CREATE TABLE hb_side_live (
    project_id uuid NOT NULL,
    lease_id uuid NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (project_id, lease_id)
);
CREATE INDEX hb_side_live_expiry ON hb_side_live (project_id, expires_at);
CREATE TABLE hb_ids (k int PRIMARY KEY, id uuid NOT NULL);

-- The index on expires_at goes (the copy LIKE made is named after the table).
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT i.relname AS idx, t.relname AS tbl
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
             WHERE t.relname IN ('hb_side', 'hb_floor')
               AND pg_get_indexdef(x.indexrelid) LIKE '%(project_id, expires_at)%'
    LOOP
        EXECUTE format('DROP INDEX %I', r.idx);
    END LOOP;
END $$;
CREATE INDEX hb_floor_due ON hb_floor (project_id, due_at) WHERE ended_at IS NULL;

CREATE TRIGGER hb_today_immutable BEFORE UPDATE OR DELETE ON hb_today FOR EACH ROW EXECUTE FUNCTION leases_guard();
CREATE TRIGGER hb_side_immutable BEFORE UPDATE OR DELETE ON hb_side FOR EACH ROW EXECUTE FUNCTION leases_guard();
CREATE TRIGGER hb_floor_immutable BEFORE UPDATE OR DELETE ON hb_floor FOR EACH ROW EXECUTE FUNCTION leases_guard();

-- One project; ended leases then live ones (ids 1..1000 in hb_ids).
INSERT INTO hb_today (project_id, id, item_id, epoch, worker, principal, acquired_at, expires_at,
                      heartbeat_at, heartbeats, ended_at, outcome, result)
SELECT '00000000-0000-0000-0000-000000000001', gen_random_uuid(), gen_random_uuid(), 1, 'worker-' || (g % 64),
       'token:bench', now() - interval '1 hour', now() - interval '59 minutes', now() - interval '59 minutes 30 seconds',
       1, now() - interval '59 minutes 10 seconds', 'completed', '{"ok": true}'
FROM generate_series(1, 100000) g;
INSERT INTO hb_ids SELECT g, gen_random_uuid() FROM generate_series(1, 1000) g;
INSERT INTO hb_today (project_id, id, item_id, epoch, worker, principal, acquired_at, expires_at)
SELECT '00000000-0000-0000-0000-000000000001', id, gen_random_uuid(), 1, 'worker-' || (k % 64),
       'token:bench', now(), now() + interval '1 hour'
FROM hb_ids;
INSERT INTO hb_side OVERRIDING SYSTEM VALUE SELECT * FROM hb_today ORDER BY seq;
INSERT INTO hb_floor OVERRIDING SYSTEM VALUE SELECT *, expires_at FROM hb_today ORDER BY seq;
INSERT INTO hb_side_live SELECT project_id, id, expires_at FROM hb_today WHERE ended_at IS NULL;
VACUUM ANALYZE hb_today, hb_side, hb_side_live, hb_floor, hb_ids;
