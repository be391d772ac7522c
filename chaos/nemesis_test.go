package main

import (
	"math/rand/v2"
	"testing"
)

// TestFaultDeckDrawsEveryKind: a scenario's first faults cover every kind
// it names, whatever the seed, so a short run (chaos-short's mixed
// scenario injects about fifteen) never passes without, say, a PostgreSQL
// restart; later rounds keep every kind within one round of the others.
func TestFaultDeckDrawsEveryKind(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 50; seed++ {
		deck := newFaultDeck(rand.New(rand.NewPCG(seed, 0)), faultKinds)
		drawn := map[string]int{}
		for round := 1; round <= 3; round++ {
			for range faultKinds {
				drawn[deck.next()]++
			}
			for _, k := range faultKinds {
				if drawn[k] != round {
					t.Fatalf("seed %d: after %d draws, %s was drawn %d times, want %d (drawn: %v)",
						seed, round*len(faultKinds), k, drawn[k], round, drawn)
				}
			}
		}
	}
}
