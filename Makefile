# workgraph — the two commands a newcomer needs:
#   make run    run the server (embedded PostgreSQL unless WORKGRAPH_DATABASE_URL is set)
#   make test   run every test (uses 127.0.0.1:5432 if it answers and allows 150 connections, else an embedded cluster)
# Extra serve flags: make run ARGS="--addr 127.0.0.1:9090 --demo"

GO ?= go
ARGS ?=
export CGO_ENABLED ?= 0

.PHONY: run test fuzz-then-test-go test-go build generate check-generated fmt-check vet ci stop-test-pg drop-test-pool fuzz-short chaos chaos-short model clients

# Builds, then execs the binary (not `go run`, which exits 1 on Ctrl-C) so
# SIGINT/SIGTERM reach the server directly and it stops its PostgreSQL.
run: build
	exec ./bin/workgraph serve $(ARGS)

# The whole suite: the short fault run (chaos-short) beside the short fuzz
# runs and then every Go test. The fault run spends most of its 90 s
# waiting out its faults on a PostgreSQL and replicas of its own (ports
# 55440-55449 and 18440-18449, nothing the tests use), so it runs at the
# same time as the rest (-j2); --output-sync=target prints each one's
# output whole when it ends, so they never interleave, and go test's own
# summary, which ends last, closes the output. A failure of either fails
# the suite once both have ended. The protocol model runs once, as the
# model package's TestModel, which WORKGRAPH_REQUIRE_SPIN makes fail
# instead of skip when spin or cc is missing (`make model` runs the same
# check.sh on its own). `make test-go` runs the Go tests alone.
test:
	@$(MAKE) --no-print-directory -j2 --output-sync=target chaos-short fuzz-then-test-go

fuzz-then-test-go: fuzz-short
	WORKGRAPH_REQUIRE_SPIN=1 $(MAKE) --no-print-directory test-go

# The Go tests mostly wait on PostgreSQL (commits, LISTEN round trips,
# the reset of each test's database), not on the CPU: more packages (-p)
# and more parallel tests per package (-parallel; both default to the
# number of cores) than cores keep the machine busy. The bound is the
# server's max_connections (100 by default, shared with whatever else
# uses it): at -p 4 -parallel 8 a shared server ran out ("too many
# clients"); 3 x 4 test servers at once stay well below it. TEST_P and
# TEST_PARALLEL override them (docs/architecture.md, Tests).
#
# -ldflags='-s -w' links the test binaries without DWARF (-w, debuggers'
# data) and without the symbol table (-s, nm's): stack traces, panics and
# profiles keep their function names and file:line, which come from the
# runtime's own tables. `go test` links every package's test binary again
# at each run: building and starting the 51 of them took 25 s (40 s of
# CPU) with DWARF, 15 s (25 s of CPU) without; the symbol table is 4-8%
# of what is left (docs/architecture.md, Tests).
#
# go test starts the packages in the order they are named (./... adds the
# rest, each once). The longest are named first (TEST_FIRST, by their
# elapsed times in the suite's -json output), so that the short ones fill
# the -p slots at the end instead of the suite ending on one long package
# while the others are done. web comes after the first five: started
# beside lease, cli/e2e and the fault run (in the elapsed order), its
# stream and browser tests failed on the load in two runs of .ci/run.
TEST_P ?= 3
TEST_PARALLEL ?= 4
TEST_FIRST ?= ./lease ./bench ./cli/e2e ./api ./model ./web ./attention ./graph ./db/embedpg ./client ./db/dbq ./server ./acceptance ./examples/counter
test-go:
	$(GO) test -count=1 -timeout 20m -p $(TEST_P) -parallel $(TEST_PARALLEL) -ldflags='-s -w' $(TEST_FIRST) ./...

# Stamps the version, commit and build date into the binary (`workgraph
# version`): -buildvcs=auto overrides a GOFLAGS=-buildvcs=false, and the
# -X values cover what Go does not stamp (a git worktree, no tag).
BI = github.com/workgraph-dev/workgraph/buildinfo
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED ?= $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS = -X $(BI).version=$(VERSION) -X $(BI).commit=$(COMMIT) -X $(BI).modified=$(MODIFIED) -X $(BI).buildDate=$(BUILD_DATE)

build:
	$(GO) build -buildvcs=auto -ldflags "$(LDFLAGS)" -o bin/workgraph ./cmd/workgraph

# Fuzzes each target for FUZZTIME executions with one worker, after its
# corpus: fuzzed bodies, query strings, cursors and path segments against a
# real server (FUZZTIME), and the input checks against PostgreSQL
# (FUZZTIME_INPUT), one target at a time (.ci/fuzz-short; FUZZ_JOBS=N runs
# N at once: on this 2-core machine under load, 3 at once took 170-178 s
# against 124-145 s one at a time), each with its output printed whole
# when it ends. A failing input is written to
# the package's testdata/fuzz/<Target>/ (commit it with the fix); the seeds
# and corpora there also run in plain `make test`. The budgets are counts,
# not durations: with a duration, Go 1.26's fuzzing coordinator can report
# "context deadline exceeded" when the time runs out mid-input
# (golang/go#75804), a failure with no failing input.
FUZZTIME ?= 600x
FUZZTIME_INPUT ?= 20000x
FUZZ_JOBS ?= 1
FUZZ_API = FuzzItemBody FuzzLeaseBody FuzzAttentionBody FuzzAdminBody FuzzSettingsBody FuzzQuery FuzzCursor
fuzz-short:
	@GO="$(GO)" ./.ci/fuzz-short $(FUZZ_JOBS) input:FuzzStorable:$(FUZZTIME_INPUT) input:FuzzScanner:$(FUZZTIME_INPUT) $(foreach t,$(FUZZ_API),api:$(t):$(FUZZTIME))

# The fault suite (docs/reliability.md): its own PostgreSQL on 55440-55449,
# 3 replicas on 18440-18449, faults from a seeded nemesis; exits non-zero on
# any violation. chaos is the full run (6 scenarios, about 6-8 minutes),
# chaos-short the one CI runs (one mixed scenario, about 2 minutes).
# Extra flags: make chaos CHAOS_ARGS="-seed 7 -duration 30s".
CHAOS_ARGS ?=
chaos: build
	$(GO) build -o bin/chaos ./chaos
	exec ./bin/chaos -bin bin/workgraph $(CHAOS_ARGS)

chaos-short: build
	$(GO) build -o bin/chaos ./chaos
	exec ./bin/chaos -bin bin/workgraph -short $(CHAOS_ARGS)

# Model-checks the claim protocol (model/lease.pml) with spin: the protocol
# as built verifies, and the variants without the fence or the destination's
# gate find their counterexamples; also with on_expiry reconcile. Needs spin
# and gcc (about 10 s).
model:
	./model/check.sh

generate:
	$(GO) tool sqlc generate

# Regenerates the clients' code from api/openapi.json after a change of the
# document (commit the result; the tests in clients/ fail until then): the
# TypeScript types (openapi-typescript, pinned in clients/typescript; run
# `npm ci` there first) and the Python client's spec module (clients/pyspec).
clients:
	cd clients/typescript && npm run --silent generate
	$(GO) run ./clients/pyspec

# Fails when the committed sqlc output differs from what the queries
# generate, or when db/dbq holds output for a query file that is gone.
check-generated:
	@echo "$(GO) tool sqlc diff"; $(GO) tool sqlc diff || { echo "check-generated: the code in db/dbq is stale or hand-edited (diff above): run 'make generate' and commit db/dbq" >&2; exit 1; }
	@for f in db/dbq/*.sql.go; do q=db/queries/$$(basename $$f .go); \
	  [ -f "$$q" ] || { echo "check-generated: $$f has no query file $$q: delete it, or run 'make generate'" >&2; exit 1; }; done

# Every Go file git knows of (tracked or untracked, not ignored).
fmt-check:
	@out=$$(git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done | xargs -r gofmt -l); \
	if [ -n "$$out" ]; then echo "fmt-check: these files are not gofmt-formatted (run gofmt -w on them):" >&2; echo "$$out" >&2; exit 1; fi

vet:
	$(GO) vet ./...

ci: fmt-check vet check-generated test

# Stops the embedded cluster the tests start when no server answers at
# 127.0.0.1:5432 or it allows too few connections (it is left running for
# the next test run otherwise).
stop-test-pg:
	$(GO) run ./db/dbtest/stoptestpg

# Drops the test databases the tests keep on their server between runs:
# the pool of reusable databases (wgpool_*, of every migrations digest,
# except those running tests hold) and the templates of other digests.
drop-test-pool:
	$(GO) run ./db/dbtest/stoptestpg -drop-pool
