package main

import (
	"fmt"
	"math"
)

// annotateRatios adds to every REST lifecycle result (workloads 2 and 7)
// its throughput as a fraction of workload 1's server SQL at the same
// number of agents, in this run: "ratio_to_w1" against claim -> complete
// (the issue's workload 1) and "ratio_to_w1_hb" against claim -> heartbeat
// -> complete (the same steps as workload 2).
func annotateRatios(rep *Report) {
	for i := range rep.Results {
		r := &rep.Results[i]
		if (r.Workload != 2 && r.Workload != 7) || r.Rate == 0 {
			continue
		}
		if w1 := find(rep, 1, "server-sql", r.Agents); w1 != nil && w1.Rate > 0 {
			r.Extra["ratio_to_w1"] = round(r.Rate/w1.Rate, 2)
		}
		if w1 := find(rep, 1, "server-sql+hb", r.Agents); w1 != nil && w1.Rate > 0 {
			r.Extra["ratio_to_w1_hb"] = round(r.Rate/w1.Rate, 2)
		}
		if r.Workload == 2 && r.Name == "rest-pgbouncer" {
			if direct := find(rep, 2, "rest", r.Agents); direct != nil && direct.Rate > 0 {
				r.Extra["ratio_to_direct"] = round(r.Rate/direct.Rate, 2)
			}
		}
	}
}

func find(rep *Report, workload int, name string, agents int) *Result {
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Workload == workload && r.Name == name && r.Agents == agents {
			return r
		}
	}
	return nil
}

func verdict(ok bool) *bool { return &ok }

// targets judges issue 7's targets on this run's figures.
func targets(rep *Report) []Target {
	annotateRatios(rep)
	var out []Target

	// Workload 2 at 16 agents reaches at least 50% of workload 1.
	t2 := Target{Workload: 2, Target: "REST lifecycle at 16 agents >= 50% of workload 1 (server SQL)"}
	agents := 16
	if find(rep, 2, "rest", agents) == nil {
		// Another agent count when 16 was not run (e.g. smoke).
		for _, r := range rep.Results {
			if r.Workload == 2 && r.Name == "rest" {
				agents = r.Agents
				break
			}
		}
	}
	if w2, w1 := find(rep, 2, "rest", agents), find(rep, 1, "server-sql", agents); w2 != nil && w1 != nil && w1.Rate > 0 {
		ratio := w2.Rate / w1.Rate
		t2.Measured = fmt.Sprintf("%d agents: %.1f vs %.1f items/s = %.0f%%", agents, w2.Rate, w1.Rate, 100*ratio)
		if hb := find(rep, 1, "server-sql+hb", agents); hb != nil && hb.Rate > 0 {
			t2.Measured += fmt.Sprintf(" (%.0f%% of server SQL with the same heartbeat step)", 100*w2.Rate/hb.Rate)
		}
		if raw := find(rep, 2, "rest-raw", agents); raw != nil {
			t2.Measured += fmt.Sprintf("; without Idempotency-Key %.1f items/s = %.0f%%", raw.Rate, 100*raw.Rate/w1.Rate)
		}
		t2.Met = verdict(ratio >= 0.5 && agents == 16)
		if agents != 16 {
			t2.Measured += " (16 agents not run: not judged)"
			t2.Met = nil
		}
	}
	out = append(out, t2)

	// Workload 4: p50 at the largest size within 1.5x of the smallest.
	t4 := Target{Workload: 4, Target: "claim p50 at 1,000,000 items within 1.5x of p50 at 1,000"}
	var small, large *Result
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Workload != 4 {
			continue
		}
		if small == nil || r.Size < small.Size {
			small = r
		}
		if large == nil || r.Size > large.Size {
			large = r
		}
	}
	if small != nil && large != nil && small != large {
		p0, p1 := small.Latency["claim"].P50Ms, large.Latency["claim"].P50Ms
		t4.Measured = fmt.Sprintf("p50 %.2f ms at %d items, %.2f ms at %d items (%.2fx)", p0, small.Size, p1, large.Size, p1/p0)
		t4.Met = verdict(p1 <= 1.5*p0)
		if small.Size != 1_000 || large.Size != 1_000_000 {
			t4.Measured += " (sizes differ from the target's: not judged)"
			t4.Met = nil
		}
	}
	out = append(out, t4)

	// Workload 14: the scoped claim within 1.5x of the plain one.
	t14 := Target{Workload: 14, Target: "claim p50 with 1,000 scoped leases and 50 capability sets within 1.5x of the plain claim"}
	var plain, scoped *Result
	for i := range rep.Results {
		switch r := &rep.Results[i]; {
		case r.Workload == 14 && r.Name == "plain":
			plain = r
		case r.Workload == 14 && r.Name == "scopes":
			scoped = r
		}
	}
	if plain != nil && scoped != nil {
		p0, p1 := plain.Latency["claim"].P50Ms, scoped.Latency["claim"].P50Ms
		if p0 > 0 {
			t14.Measured = fmt.Sprintf("p50 %.2f ms plain, %.2f ms with scopes (%.2fx)", p0, p1, p1/p0)
			t14.Met = verdict(p1 <= 1.5*p0)
		}
	}
	out = append(out, t14)

	// Workload 5: cost follows the dependents, not the project size.
	t5 := Target{Workload: 5, Target: "fan-out cost grows with dependents, not project size"}
	byD := map[int64][]*Result{}
	var ds []int64
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Workload == 5 {
			if byD[r.Size] == nil {
				ds = append(ds, r.Size)
			}
			byD[r.Size] = append(byD[r.Size], r)
		}
	}
	if len(ds) > 0 {
		met := true
		for _, d := range ds {
			rs := byD[d]
			if len(rs) < 2 {
				continue
			}
			a, b := rs[0], rs[len(rs)-1]
			ta, tb := a.Latency["complete"].P50Ms, b.Latency["complete"].P50Ms
			t5.Measured += fmt.Sprintf("%d deps: %.1f ms (%d items, %d rows) vs %.1f ms (%d items, %d rows); ",
				d, ta, int(a.Extra["project_items"]), int(a.Extra["items_touched"]),
				tb, int(b.Extra["project_items"]), int(b.Extra["items_touched"]))
			// Same rows; time within 1.5x (or 2 ms, for tiny times on a
			// noisy machine) however large the project.
			if a.Extra["items_touched"] != b.Extra["items_touched"] || tb > math.Max(1.5*ta, ta+2) {
				met = false
			}
		}
		t5.Met = verdict(met)
	}
	out = append(out, t5)
	out = append(out, leanPathTargets(rep)...)
	out = append(out, longPollTarget(rep), riverTarget(rep))
	return append(out, historyTargets(rep)...)
}

// issue15CPUBaseline is the CPU (server process plus PostgreSQL) of 1,000
// REST lifecycles that issue 15 measured when it was filed: the server
// 1.3 s and PostgreSQL 2.5 to 3.3 s (2.9 s taken). The target is a third
// of it.
const issue15CPUBaseline = 1.3 + 2.9

// leanPathTargets judges issue 15's targets on the single lease steps, at
// 16 agents in this run: server SQL (claim -> complete) at least 0.6 of
// the minimal pair; REST with the Go client (claim -> heartbeat ->
// complete) at least 0.5 of the minimal pair with a heartbeat; the CPU of
// the server process and PostgreSQL per 1,000 REST lifecycles (workload 7)
// at most a third of the issue's figure; and the server's RSS under 100
// MiB with 256 agents (workload 7).
func leanPathTargets(rep *Report) []Target {
	const agents = 16
	ratio := func(workload int, target string, name string, base string, min float64) Target {
		t := Target{Workload: workload, Target: target}
		r, b := find(rep, workload, name, agents), find(rep, 1, base, agents)
		if r != nil && b != nil && b.Rate > 0 {
			t.Measured = fmt.Sprintf("%d agents: %.1f vs %.1f items/s = %.3f", agents, r.Rate, b.Rate, r.Rate/b.Rate)
			t.Met = verdict(r.Rate/b.Rate >= min)
		}
		return t
	}
	out := []Target{
		ratio(1, "server SQL claim -> complete at 16 agents >= 0.6 of the minimal pair", "server-sql", "minimal-pair", 0.6),
		ratio(2, "REST claim -> heartbeat -> complete (Go client) at 16 agents >= 0.5 of the minimal pair with a heartbeat", "rest", "minimal-pair+hb", 0.5),
	}

	cpu := Target{Workload: 7, Target: fmt.Sprintf("CPU (server + PostgreSQL) per 1,000 REST lifecycles at 16 agents <= a third of %.1f s", issue15CPUBaseline)}
	if r := find(rep, 7, "rest (server process)", agents); r != nil {
		server, okS := r.Extra["cpu_per_1k_server_s"]
		pg, okP := r.Extra["cpu_per_1k_pg_s"]
		if okS && okP {
			cpu.Measured = fmt.Sprintf("server %.2f s + PostgreSQL %.2f s = %.2f s (%.2f of %.1f s)",
				server, pg, server+pg, (server+pg)/issue15CPUBaseline, issue15CPUBaseline)
			cpu.Met = verdict(server+pg <= issue15CPUBaseline/3)
		}
	}

	rss := Target{Workload: 7, Target: "server RSS under 100 MiB with 256 agents"}
	if r := find(rep, 7, "rest (server process)", 256); r != nil {
		rss.Measured = fmt.Sprintf("peak %.1f MiB, mean %.1f MiB (idle %.1f MiB)", r.Extra["rss_peak_mb"], r.Extra["rss_mean_mb"], r.Extra["rss_idle_mb"])
		rss.Met = verdict(r.Extra["rss_peak_mb"] < 100)
	}
	return append(out, cpu, rss)
}

// longPollTarget judges issue 15's long-poll target on workload 15 with
// one replica: at most 2 claim transactions per granted item with 256
// waiting agents.
func longPollTarget(rep *Report) Target {
	t := Target{Workload: 15, Target: "long poll: at most 2 claim transactions per granted item with 256 waiting agents"}
	r := find(rep, 15, "1 replica(s)", 256)
	if r == nil {
		for i := range rep.Results {
			if x := &rep.Results[i]; x.Workload == 15 && x.Name == "1 replica(s)" {
				r = x
			}
		}
		if r == nil {
			return t
		}
	}
	t.Measured = fmt.Sprintf("%d agents, 1 replica: %.2f claims per grant", r.Agents, r.Extra["claims_per_grant"])
	if two := find(rep, 15, "2 replica(s)", r.Agents); two != nil {
		t.Measured += fmt.Sprintf("; 2 replicas: %.2f", two.Extra["claims_per_grant"])
	}
	if r.Agents != 256 {
		t.Measured += " (256 agents not run: not judged)"
		return t
	}
	t.Met = verdict(r.Extra["claims_per_grant"] <= 2)
	return t
}

// riverTarget judges issue 15's batch target: workload 13 (batched REST,
// history written) at least as fast as workload 12 (River) in this run.
func riverTarget(rep *Report) Target {
	t := Target{Workload: 13, Target: "batched claim + complete through REST >= 1.0x River's jobs/s (workload 12, same run)"}
	w13, w12 := find(rep, 13, "rest-batch", batchAgents), find(rep, 12, "river", riverWorkers)
	if w13 != nil && w12 != nil && w12.Rate > 0 {
		ratio := w13.Rate / w12.Rate
		t.Measured = fmt.Sprintf("%.1f items/s vs River %.1f jobs/s = %.3fx", w13.Rate, w12.Rate, ratio)
		t.Met = verdict(ratio >= 1)
	}
	return t
}

// historyTargets judges workload 9 (issue 15's history targets): at the
// largest history of at least 1,000,000 ended leases, claim p50 within
// 1.5x of the baseline project's (historyBaseline leases: as good as no
// history, with pages of the same shape), and the workers and since= pages
// within 2x.
func historyTargets(rep *Report) []Target {
	var largest int64
	for _, r := range rep.Results {
		if r.Workload == 9 && r.Size > largest {
			largest = r.Size
		}
	}
	var out []Target
	for _, c := range []struct {
		name  string
		limit float64
	}{{"claim+release", 1.5}, {"GET workers", 2}, {"GET leases?since=", 2}, {"GET leases?outcome=cancelled", 2}} {
		t := Target{Workload: 9, Target: fmt.Sprintf("%s p50 at >= 1,000,000 ended leases within %gx of %d", c.name, c.limit, historyBaseline)}
		var base, big *Result
		for i := range rep.Results {
			r := &rep.Results[i]
			if r.Workload == 9 && r.Name == c.name {
				if r.Size == historyBaseline {
					base = r
				} else if r.Size == largest {
					big = r
				}
			}
		}
		if base != nil && big != nil {
			p0, p1 := base.Latency[base.Primary].P50Ms, big.Latency[big.Primary].P50Ms
			t.Measured = fmt.Sprintf("p50 %.2f ms at %d ended leases, %.2f ms at %d (%.2fx)", p0, base.Size, p1, big.Size, p1/p0)
			t.Met = verdict(p1 <= c.limit*p0)
			if big.Size < 1_000_000 {
				t.Measured += " (history below 1,000,000: not judged)"
				t.Met = nil
			}
		}
		out = append(out, t)
	}
	return out
}
