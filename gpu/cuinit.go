//go:build cuda

package gpu

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <cuda.h>

// gorgonia.org/cu calls cuInit in its package init and exits the process
// (os.Exit(1)) when it fails: no GPU, a driver too old, a broken install.
// This definition of cuInit, linked into the executable, takes precedence
// over the driver library's for that call: it forwards to the real
// cuInit (RTLD_NEXT), records the result and reports success, so the
// process starts and gpu.New returns the recorded error instead.
static CUresult zs_init_result = CUDA_ERROR_NOT_INITIALIZED;
static int zs_init_called = 0;

CUresult CUDAAPI cuInit(unsigned int flags) {
	CUresult (*real)(unsigned int) = (CUresult (*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	zs_init_called = 1;
	zs_init_result = real ? real(flags) : CUDA_ERROR_NOT_INITIALIZED;
	return CUDA_SUCCESS;
}

static int zs_init_status(int* called) {
	*called = zs_init_called;
	return (int)zs_init_result;
}
static const char* zs_init_error_name(int r) {
	const char* s = 0;
	if (cuGetErrorName((CUresult)r, &s) != CUDA_SUCCESS || !s) return "unknown CUDA error";
	return s;
}
*/
import "C"

import "fmt"

// driverInit is cuInit's real result as recorded by the interposer: nil
// when the driver initialised.
func driverInit() error {
	var called C.int
	r := C.zs_init_status(&called)
	if called == 0 {
		// the interposer was not used (another link order): cu's own init
		// already succeeded or the process would have exited.
		return nil
	}
	if r == 0 {
		return nil
	}
	name := C.GoString(C.zs_init_error_name(r))
	hint := "is an NVIDIA GPU present and its driver loaded? (nvidia-smi)"
	switch name {
	case "CUDA_ERROR_NO_DEVICE":
		hint = "no NVIDIA GPU is visible (nvidia-smi -L lists none)"
	case "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE":
		hint = "the NVIDIA driver is too old; update it"
	}
	return fmt.Errorf("cuda: the driver did not initialise: %s (%d): %s; use --backend cpu", name, int(r), hint)
}
