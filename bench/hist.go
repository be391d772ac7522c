package main

import (
	"math"
	"time"
)

// histBase is the relative width of a histogram bucket: percentiles are
// exact to within 2%.
const histBase = 1.02

// histBuckets covers 1 ns .. ~10^11 ns (100 s) at histBase.
var histBuckets = int(math.Ceil(math.Log(1e11)/math.Log(histBase))) + 1

// hist is a log-bucketed latency histogram. It is not safe for concurrent
// use: each worker records into its own and they are merged at the end.
type hist struct {
	counts   []uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

func newHist() *hist { return &hist{counts: make([]uint64, histBuckets)} }

func bucketOf(d time.Duration) int {
	if d <= 1 {
		return 0
	}
	i := int(math.Log(float64(d)) / math.Log(histBase))
	if i >= histBuckets {
		return histBuckets - 1
	}
	return i
}

// bucketValue is the upper bound of bucket i.
func bucketValue(i int) time.Duration {
	return time.Duration(math.Pow(histBase, float64(i+1)))
}

func (h *hist) add(d time.Duration) {
	h.counts[bucketOf(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// quantile returns the latency below which a fraction q of the samples
// fall (the bucket's upper bound, clamped to the observed maximum).
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketValue(i)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}

// Latency is a histogram summary in milliseconds.
type Latency struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func (h *hist) summary() Latency {
	if h.n == 0 {
		return Latency{}
	}
	return Latency{
		Count:  h.n,
		MeanMs: ms(h.sum / time.Duration(h.n)),
		P50Ms:  ms(h.quantile(0.50)),
		P95Ms:  ms(h.quantile(0.95)),
		P99Ms:  ms(h.quantile(0.99)),
		MaxMs:  ms(h.max),
	}
}
