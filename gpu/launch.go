//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

// kernel is a loaded function and its name (for errors).
type kernel struct {
	name string
	fn   cu.Function
}

// launch runs k on the backend's stream (owner goroutine only). Each
// argument travels in an 8-byte slot: device pointers, int (as int64),
// int32, float32 (its bits in the low half), float64; the driver copies
// the parameter's own size from the slot, low bytes first (little endian).
func (b *Backend) launch(k *kernel, grid, block [3]int, args ...any) {
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			slots[i] = uint64(v)
		case int:
			slots[i] = uint64(int64(v))
		case int32:
			slots[i] = uint64(uint32(v))
		case uint64:
			slots[i] = v
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		case float64:
			slots[i] = math.Float64bits(v)
		default:
			panic(fmt.Sprintf("gpu: kernel %s argument %d of type %T", k.name, i, a))
		}
		params[i] = unsafe.Pointer(&slots[i])
	}
	if err := k.fn.Launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, b.stream, params); err != nil {
		panic(fmt.Sprintf("gpu: CUDA kernel launch failed: %s (grid %v, block %v): %v", k.name, grid, block, err))
	}
}

// grid1 sizes a grid-stride launch over n elements with 256 threads.
func grid1(n int) [3]int {
	g := (n + 255) / 256
	g = max(1, min(g, 65535*8))
	return [3]int{g, 1, 1}
}

var block256 = [3]int{256, 1, 1}
