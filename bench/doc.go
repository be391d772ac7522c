// Command bench measures how fast workgraph coordinates work, side by side
// with the raw cost of the same work in PostgreSQL, on the machine it runs
// on (see docs/benchmarks.md).
//
//	go run ./bench                       # every workload, ~5-10 minutes
//	go run ./bench -smoke                # a few seconds: keeps the command working
//	go run ./bench -workloads 1,2 -duration 20s -agents 1,16,64
//
// PostgreSQL: $WORKGRAPH_BENCH_DATABASE_URL (used as is, migrated), else the
// server at 127.0.0.1:5432 (user postgres) in a fresh database
// workgraph_bench_<n> dropped at the end, else an embedded cluster.
//
// Each throughput workload runs for -warmup, then is measured for
// -duration; only operations that finish inside the measured window count.
// Results: a table on stdout, JSON in -out (bench/results/latest.json) and
// an SVG chart beside it.
package main
