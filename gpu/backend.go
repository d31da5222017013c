//go:build cuda

package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// Backend implements compute.Backend on one CUDA stream of a device: New
// returns the main lane, Lane a second one (lane.go). Lanes share the
// device (its owner goroutine, context and kernels) and have their own
// stream, memory pool and read-back buffer.
type Backend struct {
	*device
	stream cu.Stream
	pool   *pool
	// runSync is the lane's two mamba_run barrier counters (mambarun.go);
	// runTrace, when set (tests), receives mamba_run's timer stamps.
	runSync, runTrace cu.DevicePtr
	reader            *reader   // read-backs (lane.go)
	side              bool      // made by Lane
	rot               *rotTable // the last prefill's rotary angles (sequence.go; owner goroutine)
}

// device is what the lanes of one CUDA device share.
type device struct {
	work chan func()
	quit chan struct{}

	// owner-goroutine state
	dev  cu.Device
	ctx  cu.CUContext
	mods []cu.Module
	k    map[string]*kernel
	sms  int // multiprocessors (GEMV plans)

	// plan is the choice of kernels made for this device when it opened
	// (makePlan, plan.go); ops read its fields as b.hopper, b.pdl, ….
	plan
	args *unsafe.Pointer // C-allocated kernel parameter slots (launch.go)
	blob unsafe.Pointer  // C-allocated copy of a struct parameter (launch.go)

	// ownerTID is the OS thread the owner goroutine is locked to: do runs
	// a closure directly when called on it (inside Run).
	ownerTID int

	// scope is the Run in progress's tensors (scope.go), nil outside Run;
	// spare is the last scope, kept for its slice.
	scope, spare *runScope

	// lanes are every Backend of the device, the main one first; the
	// second, if any, is the one Lane returns.
	lanes []*Backend

	desc   string
	mu     sync.Mutex
	closed bool
}

var _ compute.Backend = (*Backend)(nil)

// Options are the choices a caller may make when opening the backend.
type Options struct {
	// Generic uses the generic plan (compute_80 kernels, no Hopper-only
	// instructions or launches) even on a Hopper device: tests and
	// `--gpu-plan generic` run the portable path on the machine at hand.
	Generic bool
}

// New opens CUDA device ordinal with the plan its compute capability
// allows, creates its stream and loads every kernel. It fails with a clear
// error when there is no device or the driver is too old for the embedded
// PTX.
func New(ordinal int) (*Backend, error) { return NewWith(ordinal, Options{}) }

// NewWith is New with options.
func NewWith(ordinal int, o Options) (*Backend, error) {
	b := &Backend{device: &device{work: make(chan func()), quit: make(chan struct{}), k: map[string]*kernel{}}}
	ready := make(chan error)
	go b.own(ordinal, o, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return b, nil
}

// own is the goroutine that owns the context: it initialises the device,
// then runs closures from b.work until Close.
func (b *Backend) own(ordinal int, o Options, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ownerTID = syscall.Gettid()
	if err := b.init(ordinal, o); err != nil {
		b.release()
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case f := <-b.work:
			f()
		case <-b.quit:
			b.release()
			return
		}
	}
}

func (b *Backend) init(ordinal int, o Options) error {
	if err := driverInit(); err != nil {
		return err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("cuda: counting devices: %w (is the NVIDIA driver installed?)", err)
	}
	if n == 0 {
		return errors.New("cuda: no CUDA device found; use the CPU backend")
	}
	if ordinal < 0 || ordinal >= n {
		return fmt.Errorf("cuda: device %d requested, %d present", ordinal, n)
	}
	if b.dev, err = cu.GetDevice(ordinal); err != nil {
		return fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	if b.ctx, err = b.dev.RetainPrimaryCtx(); err != nil {
		return fmt.Errorf("cuda: retaining the primary context of device %d: %w", ordinal, err)
	}
	if err = cu.SetCurrentContext(b.ctx); err != nil {
		return fmt.Errorf("cuda: making the context current: %w", err)
	}
	name, _ := b.dev.Name()
	total, _ := b.dev.TotalMem()
	major, _ := b.dev.Attribute(cu.ComputeCapabilityMajor)
	minor, _ := b.dev.Attribute(cu.ComputeCapabilityMinor)
	if b.sms, _ = b.dev.Attribute(cu.MultiprocessorCount); b.sms <= 0 {
		b.sms = 132
	}
	if major < 8 {
		return fmt.Errorf("cuda: %s has compute capability %d.%d; the kernels need 8.0 (Ampere) or newer", name, major, minor)
	}
	drv := cu.Version()
	b.desc = fmt.Sprintf("%s (%.1f GiB, sm_%d%d, driver CUDA %d.%d)", name, float64(total)/(1<<30), major, minor, drv/1000, drv%1000/10)

	// The plan, then the modules it names: the compute_90 ones on the
	// Hopper plan, whose kernels that call pdl_begin may overlap their
	// predecessor's tail (programmatic dependent launch).
	b.plan = makePlan(major, o)
	if b.stream, err = cu.MakeStreamWithPriority(streamPriority(false, b.decodeFirst()), cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: creating a stream: %w", err)
	}
	optin := smemOptin(b.dev)
	for _, m := range kernels.Modules() {
		ptx := kernels.PTX
		if b.hopper {
			ptx = kernels.HopperPTX
		}
		src, err := ptx(m)
		if err != nil {
			return err
		}
		waits := map[string]bool{}
		if b.hopper {
			for _, fn := range kernels.PDLEntries(m) {
				waits[fn] = true
			}
		}
		mod, err := cu.LoadData(src)
		if err != nil {
			return fmt.Errorf("cuda: loading kernels %q: %w (driver CUDA %d.%d may be too old for this PTX; update the NVIDIA driver)", m, err, drv/1000, drv%1000/10)
		}
		b.mods = append(b.mods, mod)
		for _, fn := range kernels.Entries(m) {
			f, err := mod.Function(fn)
			if err != nil {
				return fmt.Errorf("cuda: kernel %s.%s: %w", m, fn, err)
			}
			k := &kernel{name: fn, fn: f, pdl: waits[fn]}
			if err := allowSmem(k, optin); err != nil {
				return err
			}
			b.k[fn] = k
		}
	}
	b.pool = newPool(b)
	if b.persistentMamba {
		if err := b.allocRunSync(); err != nil {
			return fmt.Errorf("cuda: allocating barrier counters: %w", err)
		}
	}
	b.lanes = []*Backend{b}
	b.reader = newReader(b)
	return nil
}

// release frees everything of every lane (owner goroutine).
func (b *Backend) release() {
	for _, l := range b.lanes {
		l.reader.close()
		l.pool.drain()
		if l.runSync != 0 {
			_ = cu.MemFree(l.runSync)
		}
		if l.stream != (cu.Stream{}) {
			_ = l.stream.Destroy()
		}
	}
	if len(b.lanes) == 0 && b.stream != (cu.Stream{}) { // init failed half way
		_ = b.stream.Destroy()
	}
	b.lanes = nil
	for _, m := range b.mods {
		_ = m.Unload()
	}
	b.mods = nil
	freeArgs(b.args)
	b.args = nil
	freeBlob(b.blob)
	b.blob = nil
	if b.ctx != (cu.CUContext{}) {
		_ = b.dev.ReleasePrimaryCtx()
	}
}

// do runs f on the owner goroutine and waits; a panic in f (a malformed
// call or a CUDA error) is re-raised in the caller's goroutine.
func (b *Backend) do(f func()) {
	if syscall.Gettid() == b.ownerTID {
		// Already on the owner goroutine (inside Run, or an op called by
		// another op's closure): a locked thread runs no other goroutine,
		// so the thread id identifies it.
		f()
		return
	}
	var perr any
	done := make(chan struct{})
	select {
	case b.work <- func() {
		defer func() {
			perr = recover()
			close(done)
		}()
		f()
	}:
	case <-b.quit:
		panic("gpu: CUDA backend used after Close")
	}
	<-done
	if perr != nil {
		panic(perr)
	}
}

var _ compute.Runner = (*Backend)(nil)

// Run implements compute.Runner: f runs on the owner goroutine in one
// hand-off, and every backend op it calls runs directly there (no channel
// round trip, no cross-thread wake-ups). Other goroutines' ops wait until
// f returns. A panic in f is re-raised in the caller. f must not wait for
// another goroutine that uses this backend.
func (b *Backend) Run(f func()) {
	b.do(func() { b.inScope(f) })
}

func (b *Backend) Name() string { return "cuda" }

// Device describes the hardware: name, memory, compute capability and the
// driver's CUDA version (Plan says which kernels run on it).
func (b *Backend) Device() string { return b.desc }

// Close waits for queued work, frees all device memory and the context.
// On a side lane (Lane) it does nothing: the main Backend's Close releases
// every lane.
func (b *Backend) Close() error {
	if b.side {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.do(func() {
		for _, l := range b.lanes {
			_ = l.stream.Synchronize()
		}
	})
	close(b.quit)
	return nil
}

// sync waits for the stream and turns an asynchronous kernel fault into a
// panic naming it (owner goroutine).
func (b *Backend) sync(what string) {
	if err := b.stream.Synchronize(); err != nil {
		panic(fmt.Sprintf("gpu: %s: %v", what, err))
	}
}

// Synchronize waits until every queued kernel has finished (for timing).
func (b *Backend) Synchronize() { b.do(func() { b.sync("synchronize") }) }

// MemInfo reports free and total device memory in bytes.
func (b *Backend) MemInfo() (free, total int64) {
	b.do(func() { free, total, _ = cu.MemInfo() })
	return
}
