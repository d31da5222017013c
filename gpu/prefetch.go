//go:build cuda

package gpu

import (
	"zonostream/engine/compute"

	"gorgonia.org/cu"
)

// prefetchBudget bounds the bytes one PrefetchNext hint asks of the L2
// (ZONOS_PREFETCH_MB, 0 to ignore hints), split evenly over its regions.
// The H200's L2 is 60 MB and the projections stream through it, so the
// hint fetches only what the next kernel's first blocks read.
var prefetchBudget = envIntZero("ZONOS_PREFETCH_MB", 16) << 20

// pfRegion is a byte range of device memory for l2_prefetch_share
// (16-byte aligned, n a multiple of 16; n = 0: none).
type pfRegion struct {
	p cu.DevicePtr
	n int
}

var _ compute.CachePrefetch = (*Backend)(nil)

// PrefetchNext (compute.CachePrefetch) keeps at most two BF16 regions, each
// cut to its share of prefetchBudget, for the lane's next mamba_run or
// attn_step to ask of the L2 (takePrefetch). Off Hopper (no bulk
// prefetch) it does nothing.
func (b *Backend) PrefetchNext(regions ...compute.CacheRegion) {
	if prefetchBudget == 0 || len(regions) == 0 || !b.hopper {
		return
	}
	regions = regions[:min(len(regions), 2)]
	share := prefetchBudget / len(regions)
	var rs [2]pfRegion
	for i, r := range regions {
		w := cast(r.W)
		if w.dt != compute.BF16 || len(w.shape) != 2 {
			continue
		}
		lo, hi := max(r.Lo, 0), min(r.Hi, w.shape[0])
		if hi <= lo {
			continue
		}
		row := 2 * w.shape[1]
		rs[i] = pfRegion{w.ptr() + cu.DevicePtr(lo*row), min((hi-lo)*row, share) &^ 15}
	}
	b.do(func() { b.prefetch = rs })
}

// takePrefetch returns the pending hint and clears it (owner goroutine):
// a hint serves the next consumer only, whether it uses it or not.
func (b *Backend) takePrefetch() [2]pfRegion {
	r := b.prefetch
	b.prefetch = [2]pfRegion{}
	return r
}

// dropPrefetch clears a pending hint whose consumer declined its op.
func (b *Backend) dropPrefetch() {
	if prefetchBudget == 0 || !b.hopper {
		return
	}
	b.do(func() { b.takePrefetch() })
}
