//go:build cuda

package gpu

/*
#include <cudaProfiler.h>
*/
import "C"

// ProfileRange marks f as the only part of the run a profiler started with
// `--profile-from-start off` (ncu, nsys) records: cuProfilerStart before,
// cuProfilerStop after, on the owner thread.
func (b *Backend) ProfileRange(f func()) {
	b.do(func() { C.cuProfilerStart() })
	defer b.do(func() { C.cuProfilerStop() })
	f()
}
