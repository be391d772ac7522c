package main

import "testing"

// TestLeanPathTargets judges issue 15's single-step targets from a run's
// figures: each is met exactly at its bound, unmet below it, and not
// judged when the run did not measure it.
func TestLeanPathTargets(t *testing.T) {
	t.Parallel()
	run := func(serverSQL, rest, serverCPU, pgCPU, rss float64) *Report {
		return &Report{Results: []Result{
			{Workload: 1, Name: "minimal-pair", Agents: 16, Rate: 1000},
			{Workload: 1, Name: "minimal-pair+hb", Agents: 16, Rate: 800},
			{Workload: 1, Name: "server-sql", Agents: 16, Rate: serverSQL},
			{Workload: 2, Name: "rest", Agents: 16, Rate: rest},
			{Workload: 7, Name: "rest (server process)", Agents: 16, Rate: 100,
				Extra: map[string]float64{"cpu_per_1k_server_s": serverCPU, "cpu_per_1k_pg_s": pgCPU}},
			{Workload: 7, Name: "rest (server process)", Agents: 256, Rate: 100,
				Extra: map[string]float64{"rss_peak_mb": rss, "rss_mean_mb": rss, "rss_idle_mb": 40}},
		}}
	}
	met := func(t *testing.T, rep *Report, want ...bool) {
		t.Helper()
		got := leanPathTargets(rep)
		if len(got) != len(want) {
			t.Fatalf("%d targets, want %d", len(got), len(want))
		}
		for i, tg := range got {
			if tg.Met == nil {
				t.Fatalf("target %q not judged (measured %q)", tg.Target, tg.Measured)
			}
			if *tg.Met != want[i] {
				t.Errorf("target %q: met %v, want %v (measured %q)", tg.Target, *tg.Met, want[i], tg.Measured)
			}
		}
	}
	t.Run("AtTheBounds", func(t *testing.T) {
		t.Parallel()
		met(t, run(600, 400, 0.4, issue15CPUBaseline/3-0.4, 99.9), true, true, true, true)
	})
	t.Run("BelowTheBounds", func(t *testing.T) {
		t.Parallel()
		met(t, run(599, 399, 0.4, issue15CPUBaseline/3, 100), false, false, false, false)
	})
	t.Run("NotMeasured", func(t *testing.T) {
		t.Parallel()
		for _, tg := range leanPathTargets(&Report{}) {
			if tg.Met != nil || tg.Measured != "" {
				t.Errorf("target %q judged without figures: %q", tg.Target, tg.Measured)
			}
		}
	})
}
