//go:build cuda

package gpu

// These tests run after gpu_test.go (file order): the out-of-memory case
// drains the allocator cache and the probes move its collection threshold,
// which TestSteadyStateAllocates must not see.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"zonostream/engine/compute"
)

// TestTimer: device-event timing and the bandwidth probes give plausible
// figures, and MemoryInUse counts what the allocator holds.
func TestTimer(t *testing.T) {
	need(t)
	x := gb.Zeros(4096, 4096)
	d := gb.Time(func() {
		for i := 0; i < 20; i++ {
			x = gb.Add(x, x)
		}
	})
	if d <= 0 || d > 10*time.Second {
		t.Errorf("Time of 20 adds of 64 MiB: %v", d)
	}
	copyBW, readBW := gb.CopyBandwidth(1<<30), gb.ReadBandwidth(1<<30)
	mem := gb.MemoryInUse()
	t.Logf("20 adds of 64 MiB: %v (%.0f GB/s); copy %.0f GB/s, read %.0f GB/s; memory in use %.2f GB",
		d, 20*3*float64(64<<20)/d.Seconds()/1e9, copyBW/1e9, readBW/1e9, float64(mem)/1e9)
	if copyBW < 1e11 || readBW < 1e11 || copyBW > 1e14 || readBW > 1e14 {
		t.Errorf("implausible bandwidths: copy %.3g, read %.3g B/s", copyBW, readBW)
	}
	if mem < 64<<20 {
		t.Errorf("MemoryInUse %d with a 64 MiB tensor alive", mem)
	}
}

// TestOutOfMemoryIsClear: an allocation larger than the device says what
// was needed and free and offers the CPU backend; Upload turns it into an
// error, and the backend stays usable.
func TestOutOfMemoryIsClear(t *testing.T) {
	need(t)
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		gb.Zeros(1<<40, 64) // 256 TiB
	}()
	t.Log(msg)
	for _, want := range []string{"out of device memory", "needed", "free", "--backend cpu"} {
		if !strings.Contains(msg, want) {
			t.Errorf("out-of-memory panic %q lacks %q", msg, want)
		}
	}
	_, err := gb.Upload(compute.I32, []int{0}, nil)
	if err != nil {
		t.Errorf("empty upload after OOM: %v", err)
	}
	v := gb.ReadF32(gb.Scale(gb.FromF32([]float32{1, 2}, 2), 3))
	if v[0] != 3 || v[1] != 6 {
		t.Errorf("backend unusable after OOM: %v", v)
	}
}

// TestLaunchFailureIsClear: a launch the driver refuses (too many threads
// per block) is a panic in the caller naming the kernel, and the backend
// goes on working.
func TestLaunchFailureIsClear(t *testing.T) {
	need(t)
	x := gb.FromF32([]float32{1, 2, 3}, 3).(*tensor)
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		gb.do(func() {
			gb.launch(gb.k["scale_f32"], [3]int{1, 1, 1}, [3]int{4096, 1, 1}, x.ptr(), x.ptr(), float32(2), 3)
		})
	}()
	t.Log(msg)
	if !strings.Contains(msg, "launch failed") || !strings.Contains(msg, "scale_f32") {
		t.Errorf("launch failure panic %q", msg)
	}
	v := gb.ReadF32(gb.Scale(x, 2))
	if v[0] != 2 || v[2] != 6 {
		t.Errorf("backend unusable after a failed launch: %v", v)
	}
}
