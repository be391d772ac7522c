# workgraph — the two commands a newcomer needs:
#   make run    run the server (embedded PostgreSQL unless WORKGRAPH_DATABASE_URL is set)
#   make test   run every test (uses 127.0.0.1:5432 if it answers, else an embedded cluster)
# Extra serve flags: make run ARGS="--addr 127.0.0.1:9090 --demo"

GO ?= go
ARGS ?=
export CGO_ENABLED ?= 0

.PHONY: run test build generate check-generated fmt-check vet ci stop-test-pg fuzz-short model

# Builds, then execs the binary (not `go run`, which exits 1 on Ctrl-C) so
# SIGINT/SIGTERM reach the server directly and it stops its PostgreSQL.
run: build
	exec ./bin/workgraph serve $(ARGS)

test:
	$(GO) test -count=1 -timeout 20m ./...

build:
	$(GO) build -o bin/workgraph ./cmd/workgraph

# Fuzzes each target for FUZZTIME with one worker (about 1-2 minutes in
# all): fuzzed bodies, query strings, cursors and path segments against a
# real server, and the input checks against PostgreSQL. A failing input is
# written to the package's testdata/fuzz/<Target>/ (commit it with the
# fix); the seeds and corpora there also run in plain `make test`.
FUZZTIME ?= 10s
FUZZ_API = FuzzItemBody FuzzLeaseBody FuzzAttentionBody FuzzAdminBody FuzzQuery FuzzCursor
fuzz-short:
	@for t in $(FUZZ_API); do echo "fuzz ./api $$t"; \
	  $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./api/ || exit 1; done
	@echo "fuzz ./input FuzzStorable"; \
	  $(GO) test -run '^$$' -fuzz '^FuzzStorable$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 1 ./input/

# Model-checks the claim protocol (model/lease.pml) with spin: the protocol
# as built verifies, and the variants without the fence or the destination's
# gate find their counterexamples; also with on_expiry reconcile. Needs spin
# and gcc (about 10 s).
model:
	./model/check.sh

generate:
	$(GO) tool sqlc generate

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
# 127.0.0.1:5432 (it is left running for the next test run otherwise).
stop-test-pg:
	$(GO) run ./db/dbtest/stoptestpg
