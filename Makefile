# workgraph — the two commands a newcomer needs:
#   make run    run the server (embedded PostgreSQL unless WORKGRAPH_DATABASE_URL is set)
#   make test   run every test (uses 127.0.0.1:5432 if it answers, else an embedded cluster)

GO ?= go
export CGO_ENABLED ?= 0

.PHONY: run test build generate check-generated fmt-check vet ci

run:
	$(GO) run ./cmd/workgraph serve

test:
	$(GO) test -count=1 -timeout 20m ./...

build:
	$(GO) build -o bin/workgraph ./cmd/workgraph

generate:
	$(GO) tool sqlc generate

# Fails when the committed sqlc output differs from what the queries generate.
check-generated:
	$(GO) tool sqlc diff

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

ci: fmt-check vet check-generated test
