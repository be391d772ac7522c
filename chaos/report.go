package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/chaos/check"
)

// row is one scenario's line of the report.
type row struct {
	name                   string
	ops                    int
	acked, refused, unknow int
	faults                 map[string]int
	recoveryMax            time.Duration
	recoveryMean           time.Duration
	drained                time.Duration // -1: not within the bound
	leases, items          int
	result                 check.Result
}

func newRow(name string, h *check.History, res check.Result, drained time.Duration) row {
	r := row{name: name, ops: len(h.Ops), faults: map[string]int{}, drained: drained,
		leases: len(h.Leases), items: len(h.Items), result: res}
	for _, op := range h.Ops {
		switch op.Answer {
		case check.Acked:
			r.acked++
		case check.Refused:
			r.refused++
		default:
			r.unknow++
		}
	}
	var sum time.Duration
	n := 0
	for _, f := range h.Faults {
		r.faults[f.Kind]++
		if f.Healed.IsZero() {
			continue
		}
		d := f.Healed.Sub(f.End)
		sum += d
		n++
		r.recoveryMax = max(r.recoveryMax, d)
	}
	if n > 0 {
		r.recoveryMean = sum / time.Duration(n)
	}
	return r
}

func (r row) faultText() string {
	var kinds []string
	for k := range r.faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.faults[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// renderReport writes the tables (markdown): one line per scenario, then the
// violations per invariant, then the first violations of each in words.
func renderReport(cfg config, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Chaos run: seed %d, %s of faults per scenario, %d workers, lease_seconds %d\n\n",
		cfg.seed, cfg.duration, cfg.workers, cfg.ttl)
	fmt.Fprintln(&b, "| scenario | operations | acked | refused | unknown | leases | items | faults | recovery (mean / max) | drained in |")
	fmt.Fprintln(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |")
	var tot row
	for _, r := range rows {
		drain := r.drained.Round(100 * time.Millisecond).String()
		if r.drained < 0 {
			drain = "not within " + cfg.drain.String()
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s | %s / %s | %s |\n", r.name, r.ops, r.acked, r.refused, r.unknow,
			r.leases, r.items, r.faultText(), r.recoveryMean.Round(time.Millisecond), r.recoveryMax.Round(time.Millisecond), drain)
		tot.ops += r.ops
		tot.acked += r.acked
		tot.refused += r.refused
		tot.unknow += r.unknow
		tot.leases += r.leases
		tot.items += r.items
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %d | | | |\n\n", tot.ops, tot.acked, tot.refused, tot.unknow, tot.leases, tot.items)

	fmt.Fprintf(&b, "Violations per invariant (each must be 0):\n\n| scenario | %s |\n|---|%s\n", strings.Join(check.Invariants, " | "), strings.Repeat("---:|", len(check.Invariants)))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r.name)
		for _, inv := range check.Invariants {
			fmt.Fprintf(&b, " %d |", r.result.Count(inv))
		}
		fmt.Fprintln(&b)
	}
	any := false
	for _, r := range rows {
		if r.result.OK() {
			continue
		}
		if !any {
			fmt.Fprint(&b, "\nViolations (at most 5 per invariant and scenario):\n\n")
			any = true
		}
		for _, inv := range check.Invariants {
			n := 0
			for _, v := range r.result.Violations {
				if v.Invariant != inv {
					continue
				}
				if n++; n <= 5 {
					fmt.Fprintf(&b, "- %s / %s: %s\n", r.name, inv, v.Detail)
				}
			}
			if n > 5 {
				fmt.Fprintf(&b, "- %s / %s: ... and %d more\n", r.name, inv, n-5)
			}
		}
	}
	if !any {
		fmt.Fprintln(&b, "\nNo violations.")
	}
	return b.String()
}
