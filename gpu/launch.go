//go:build cuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

// zs_launch launches f with the parameters in params (pointers into a
// C-allocated slot array). With pdl set it uses cuLaunchKernelEx and the
// programmatic-stream-serialization attribute (Hopper): the kernel may
// start before the previous kernel of the stream completes, and waits for
// it in griddepcontrol.wait (pdl_begin in kernels/common.cuh). cluster > 0
// groups the grid's blocks in clusters of that many along x (Hopper).
static CUresult zs_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned smem, void* stream, void** params, int pdl, unsigned cluster) {
	if (!pdl && !cluster) return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, (CUstream)stream, params, 0);
	CUlaunchAttribute attr[2];
	memset(attr, 0, sizeof attr);
	unsigned n = 0;
	if (pdl) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attr[n].value.programmaticStreamSerializationAllowed = 1;
		n++;
	}
	if (cluster) {
		attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[n].value.clusterDim.x = cluster;
		attr[n].value.clusterDim.y = 1;
		attr[n].value.clusterDim.z = 1;
		n++;
	}
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = gx; cfg.gridDimY = gy; cfg.gridDimZ = gz;
	cfg.blockDimX = bx; cfg.blockDimY = by; cfg.blockDimZ = bz;
	cfg.sharedMemBytes = smem;
	cfg.hStream = (CUstream)stream;
	cfg.attrs = attr;
	cfg.numAttrs = n;
	return cuLaunchKernelEx(&cfg, f, params, 0);
}

// zs_allow_smem lets f be launched with up to bytes of dynamic shared
// memory (above the default 48 KiB).
static CUresult zs_allow_smem(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

// zs_args allocates n parameter slots and n pointers to them.
static void** zs_args(int n) {
	void** p = (void**)malloc(n * (sizeof(void*) + sizeof(uint64_t)));
	uint64_t* slots = (uint64_t*)(p + n);
	for (int i = 0; i < n; i++) p[i] = &slots[i];
	return p;
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"

	"zonostream/gpu/kernels"
)

// kernel is a loaded function and its name (for errors). pdl: the kernel
// waits for its predecessor itself (its sm_90 body calls pdl_begin), so it
// is launched with programmatic dependent launch where the plan uses it
// (plan.pdl).
type kernel struct {
	name     string
	fn       cu.Function
	pdl      bool
	launches int // launched so far (owner goroutine; tests check which path ran)
	// smemRefused: the dynamic shared memory the kernel needs and this
	// device cannot give a block (allowSmem); launchEx refuses it.
	smemRefused int
}

// maxBlob bounds a struct parameter's size (the driver's 4 KiB limit on
// a kernel's parameters).
const maxBlob = 4096

// maxArgs bounds a kernel's parameter count (the slot array is allocated
// once per backend and reused: launches happen on the owner goroutine only).
const maxArgs = 32

// cuFunction is the driver handle inside a cu.Function (a struct of one
// C.CUfunction field in gorgonia.org/cu v0.9.6; checked by the size test
// below at start-up).
func cuFunction(f cu.Function) C.CUfunction {
	return *(*C.CUfunction)(unsafe.Pointer(&f))
}

func init() {
	if unsafe.Sizeof(cu.Function{}) != unsafe.Sizeof(uintptr(0)) {
		panic("gpu: gorgonia.org/cu Function is no longer a single handle; update cuFunction")
	}
}

// launch runs k on the backend's stream (owner goroutine only). Each
// argument travels in an 8-byte slot: device pointers, int (as int64),
// int32, float32 (its bits in the low half), float64; the driver copies
// the parameter's own size from the slot, low bytes first (little endian).
func (b *Backend) launch(k *kernel, grid, block [3]int, args ...any) {
	b.launchSmem(k, grid, block, 0, args...)
}

// launchSmem is launch with smem bytes of dynamic shared memory (at most
// what dynamicSmem allows k).
func (b *Backend) launchSmem(k *kernel, grid, block [3]int, smem int, args ...any) {
	b.launchEx(k, grid, block, smem, 0, args...)
}

// launchCluster is launch with the grid's blocks grouped in clusters of
// cluster blocks along x (Hopper only; grid[0] a multiple of cluster).
func (b *Backend) launchCluster(k *kernel, grid, block [3]int, cluster int, args ...any) {
	if !b.hopper || cluster <= 0 || grid[0]%cluster != 0 {
		panic(fmt.Sprintf("gpu: kernel %s: clusters of %d blocks for grid %v (Hopper %v)", k.name, cluster, grid, b.hopper))
	}
	b.launchEx(k, grid, block, 0, cluster, args...)
}

func (b *Backend) launchEx(k *kernel, grid, block [3]int, smem, cluster int, args ...any) {
	if k.smemRefused > 0 && smem > 48<<10 {
		panic(fmt.Sprintf("gpu: kernel %s needs %d bytes of shared memory a block, more than %s allows", k.name, smem, b.desc))
	}
	if len(args) > maxArgs {
		panic(fmt.Sprintf("gpu: kernel %s has %d arguments (at most %d)", k.name, len(args), maxArgs))
	}
	if b.args == nil {
		b.args = C.zs_args(maxArgs)
	}
	ptrs := unsafe.Slice(b.args, maxArgs)
	blobs := 0
	for i, a := range args {
		var v uint64
		switch x := a.(type) {
		case []byte: // a parameter passed by value as a struct (mamba_run's)
			if len(x) == 0 || len(x) > maxBlob || blobs > 0 {
				panic(fmt.Sprintf("gpu: kernel %s argument %d: a %d-byte struct (at most one of %d bytes)", k.name, i, len(x), maxBlob))
			}
			blobs++
			if b.blob == nil {
				b.blob = C.malloc(maxBlob)
			}
			C.memcpy(b.blob, unsafe.Pointer(&x[0]), C.size_t(len(x)))
			slot := ptrs[i]
			ptrs[i] = b.blob
			defer func() { ptrs[i] = slot }()
			continue
		case cu.DevicePtr:
			v = uint64(x)
		case int:
			v = uint64(int64(x))
		case int32:
			v = uint64(uint32(x))
		case uint32:
			v = uint64(x)
		case uint64:
			v = x
		case float32:
			v = uint64(math.Float32bits(x))
		case float64:
			v = math.Float64bits(x)
		default:
			panic(fmt.Sprintf("gpu: kernel %s argument %d of type %T", k.name, i, a))
		}
		*(*uint64)(ptrs[i]) = v
	}
	k.launches++
	pdl := C.int(0)
	if k.pdl && b.pdl {
		pdl = 1
	}
	r := C.zs_launch(cuFunction(k.fn), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), C.uint(smem), unsafe.Pointer(b.stream.C()), b.args, pdl, C.uint(cluster))
	if err := cuErr(r); err != nil {
		panic(fmt.Sprintf("gpu: CUDA kernel launch failed: %s (grid %v, block %v): %v", k.name, grid, block, err))
	}
}

// freeArgs frees the parameter slots (nil is fine).
func freeArgs(p *unsafe.Pointer) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// freeBlob frees the struct parameter's buffer (nil is fine).
func freeBlob(p unsafe.Pointer) {
	if p != nil {
		C.free(p)
	}
}

// grid1 sizes a grid-stride launch over n elements with 256 threads.
func grid1(n int) [3]int {
	g := (n + 255) / 256
	g = max(1, min(g, 65535*8))
	return [3]int{g, 1, 1}
}

var block256 = [3]int{256, 1, 1}

// dynamicSmem lists the kernels launched with more dynamic shared memory
// than the default 48 KiB allows, and how much.
var dynamicSmem = map[string]int{"mamba_run": runSmem, "mamba_run_trace": runSmem, "tc_wide": tcWideSmem, "tc_wbf": tcWbfSmem, "tc_wg": tcWgSmem, "conv_tcq_n32_deep": tcqDeepSmem}

// The gemv_tc variants over 48 KiB (gemv.go's table), and the chunk GEMVs
// over it.
func init() {
	for _, f := range []chunkFamily{gemvChunkKernel, gemvChunkConvKernel, gemvChunkNormKernel, gemvChunkGLUKernel} {
		for _, kt := range []int{1, 2, 4} {
			if f.pieces*4096 > 48<<10 {
				dynamicSmem[f.one[kt]] = f.pieces * 4096
			}
			dynamicSmem[f.batch[kt]] = kernels.GemvBatchPieces * 4096
		}
	}
	for v, name := range gemvTCKernels {
		if v.smem() > 48<<10 {
			dynamicSmem[name] = v.smem()
		}
	}
}

// allowSmem lets k be launched with the dynamic shared memory it needs,
// where the device has that much: optin is its limit a block (0:
// unknown), which the kernel's static shared memory counts against, as
// the driver counts it. A kernel that does not fit is one of the Hopper
// paths (mamba_run's 192 KiB ring against an Ampere's 163 KiB or an Ada's
// 99 KiB), which the backend launches only on a Hopper GPU: it stays at
// the default, and launchEx refuses it by name, rather than the backend
// failing to load on a smaller GPU.
func allowSmem(k *kernel, optin int) error {
	bytes, ok := dynamicSmem[k.name]
	if !ok {
		return nil
	}
	if static, err := k.fn.Attribute(cu.SharedSizeBytes); err == nil && optin > 0 && bytes+static > optin {
		k.smemRefused = bytes
		return nil
	}
	if err := cuErr(C.zs_allow_smem(cuFunction(k.fn), C.int(bytes))); err != nil {
		return fmt.Errorf("cuda: kernel %s: allowing %d bytes of shared memory: %w", k.name, bytes, err)
	}
	return nil
}

// smemOptin is the device's opt-in shared memory limit a block, in bytes
// (0 if the driver does not say).
func smemOptin(d cu.Device) int {
	n, err := d.Attribute(cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
	if err != nil {
		return 0
	}
	return n
}
