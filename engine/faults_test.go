package engine

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

// copyPack copies a golden pack's config.json and model.safetensors into a
// new temporary directory, so a test can damage them.
func copyPack(t *testing.T, pack string) string {
	t.Helper()
	src, dst := golden.Pack(t, pack), t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors"} {
		in, err := os.Open(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// openFDs counts this process's open file descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}

// settleGoroutines waits (bounded, by count of polls, not by a deadline the
// test asserts on) for goroutines of finished utterances to exit, and
// returns the count.
func settleGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > limit; i++ {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestFaultWeightsDamagedBetweenRuns: a weights file truncated, emptied,
// overwritten with another model or with garbage, or a config that no
// longer matches, is refused by Load with an error naming the file and
// the problem; nothing panics.
func TestFaultWeightsDamagedBetweenRuns(t *testing.T) {
	dac := golden.Pack(t, "dac-tiny")
	orig, err := os.ReadFile(filepath.Join(golden.Pack(t, "zonos-hybrid-tiny"), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(filepath.Join(golden.Pack(t, "zonos-transformer-tiny"), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	hdr := 8 + int(uint64(orig[0])|uint64(orig[1])<<8|uint64(orig[2])<<16|uint64(orig[3])<<24)
	garbage := append([]byte(nil), orig...)
	for i := 8; i < hdr; i += 7 {
		garbage[i] ^= 0x5a
	}
	cases := []struct {
		name  string
		data  []byte
		want  []string // every one must appear in the error
		model bool     // damage the Zonos file (else the DAC file)
	}{
		{"empty", nil, []string{"model.safetensors"}, true},
		{"7 bytes", orig[:7], []string{"model.safetensors"}, true},
		{"header cut", orig[:hdr-10], []string{"model.safetensors"}, true},
		{"half", orig[:len(orig)/2], []string{"model.safetensors", "outside the"}, true},
		{"last byte missing", orig[:len(orig)-1], []string{"model.safetensors", "outside the"}, true},
		{"header bytes flipped", garbage, []string{"model.safetensors"}, true},
		{"other model's weights", other, []string{"model.safetensors", "do not match the config"}, true},
		{"dac truncated", nil, []string{"dac weights", "model.safetensors", "outside the"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			zd := copyPack(t, "zonos-hybrid-tiny")
			dd := dac
			target := filepath.Join(zd, "model.safetensors")
			data := c.data
			if !c.model {
				dd = copyPack(t, "dac-tiny")
				target = filepath.Join(dd, "model.safetensors")
				full, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				data = full[:len(full)*2/3]
			}
			// A first run works; then the file changes on disk.
			if _, err := Load(cpu.New(0), PathsFromDirs(zd, dd)); err != nil {
				t.Fatalf("intact pack: %v", err)
			}
			if err := os.WriteFile(target, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(cpu.New(0), PathsFromDirs(zd, dd))
			if err == nil {
				t.Fatal("damaged weights loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", firstLine(err), w)
				}
			}
			t.Logf("%s: %s", c.name, firstLine(err))
		})
	}
	t.Run("config changed", func(t *testing.T) {
		zd := copyPack(t, "zonos-hybrid-tiny")
		cfg, err := os.ReadFile(filepath.Join(zd, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ from, to, want string }{
			{`"n_layer": 5`, `"n_layer": 6`, "backbone.layers.5"},
			{`"attn_mlp_d_intermediate": 512`, `"attn_mlp_d_intermediate": 256`, "mlp"},
			{`"backbone"`, `"backbone`, "JSON"},
		} {
			bad := strings.Replace(string(cfg), c.from, c.to, 1)
			if bad == string(cfg) {
				t.Fatalf("config has no %q", c.from)
			}
			os.WriteFile(filepath.Join(zd, "config.json"), []byte(bad), 0o644)
			_, err := Load(cpu.New(0), PathsFromDirs(zd, dac))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s → %s: err %v, want one mentioning %q", c.from, c.to, err, c.want)
			}
		}
	})
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// TestFaultWeightsChangedUnderLoadedEngine: once loaded, the engine holds
// its own copy of the weights, so truncating or deleting the files on disk
// (an update of the model cache while the app runs) cannot crash it: the
// next utterance gives the same codes as before.
func TestFaultWeightsChangedUnderLoadedEngine(t *testing.T) {
	zd, dd := copyPack(t, "zonos-hybrid-tiny"), copyPack(t, "dac-tiny")
	e, err := Load(cpu.New(0), PathsFromDirs(zd, dd))
	if err != nil {
		t.Fatal(err)
	}
	codes := func() [][9]int32 {
		s, err := e.Synthesize(context.Background(), shortRequest())
		if err != nil {
			t.Fatal(err)
		}
		drain(s)
		if err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		return s.Codes()
	}
	before := codes()
	if err := os.Truncate(filepath.Join(zd, "model.safetensors"), 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dd, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	after := codes()
	if len(after) != len(before) {
		t.Fatalf("%d frames after the files changed, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("frame %d differs after the files changed on disk", i)
		}
	}
}

// TestFaultCancelStorm: speak/stop 100 times in quick succession, stopping
// at a random point (before reading anything, after a few events, after
// audio began, or through the caller's context); then a normal utterance
// works and equals one from a fresh engine (-short: 20 times). No goroutine or file is left
// behind and nothing deadlocks (the test's own timeout is the judge).
func TestFaultCancelStorm(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	warm, err := e.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	drain(warm)
	g0, fd0 := settleGoroutines(0), openFDs(t)
	rng := rand.New(rand.NewPCG(11, 12))
	storms := 100
	if testing.Short() { // the -race run: fewer, same mix
		storms = 20
	}
	var cancelled, done int
	for i := 0; i < storms; i++ {
		r := shortRequest()
		r.MaxSeconds = 2
		r.Seed = uint64(i)
		ctx, cancelCtx := context.WithCancel(context.Background())
		s, err := e.Synthesize(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		mode, after := rng.IntN(4), rng.IntN(12)
		stop := func() {
			if mode == 3 {
				cancelCtx()
			} else {
				s.Cancel()
			}
		}
		if mode == 0 {
			stop()
		}
		n := 0
		var final Event
		for ev := range s.Events() {
			n++
			if (mode == 1 && n == after) || (mode >= 2 && ev.Kind == Audio) {
				stop()
			}
			if ev.Kind == Done || ev.Kind == Failed {
				final = ev
			}
		}
		werr := s.Wait()
		switch {
		case final.Kind == Failed && errors.Is(final.Err, context.Canceled) && errors.Is(werr, context.Canceled):
			cancelled++
		case final.Kind == Done && werr == nil:
			done++
		default:
			t.Fatalf("storm %d (mode %d): final %v err %v, Wait %v", i, mode, final.Kind, final.Err, werr)
		}
		cancelCtx()
	}
	g1, fd1 := settleGoroutines(g0), openFDs(t)
	t.Logf("%d speak/stop: %d cancelled, %d finished first; goroutines %d → %d, open files %d → %d", storms, cancelled, done, g0, g1, fd0, fd1)
	if g1 > g0 {
		t.Errorf("goroutines %d → %d after %d cancels", g0, g1, storms)
	}
	if fd1 > fd0 {
		t.Errorf("open files %d → %d after %d cancels", fd0, fd1, storms)
	}
	if cancelled < storms/2 {
		t.Errorf("only %d of %d utterances were cancelled: the storm did not storm", cancelled, storms)
	}
	// The next utterance works and matches a fresh engine's.
	s, err := e.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	got := drain(s)
	if got.final.Kind != Done {
		t.Fatalf("after the storm: %v %v", got.final.Kind, got.final.Err)
	}
	fresh := tinyEngine(t, "hybrid")
	s2, err := fresh.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := drain(s2)
	if len(got.pcm) != len(want.pcm) {
		t.Fatalf("after the storm %d samples, fresh engine %d", len(got.pcm), len(want.pcm))
	}
	for i := range want.pcm {
		if got.pcm[i] != want.pcm[i] {
			t.Fatalf("sample %d after the storm %g, fresh engine %g", i, got.pcm[i], want.pcm[i])
		}
	}
}

// TestFaultAbandonedStreams: a caller that cancels and walks away without
// reading (the app's stop-then-speak) does not wedge the engine: the next
// request still runs to Done.
func TestFaultAbandonedStreams(t *testing.T) {
	e := tinyEngine(t, "hybrid")
	g0 := settleGoroutines(0)
	for i := 0; i < 5; i++ {
		r := shortRequest()
		r.MaxSeconds = 5
		s, err := e.Synthesize(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		<-s.Events() // started
		s.Cancel()   // and never read again
	}
	s, err := e.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	if c := drain(s); c.final.Kind != Done {
		t.Fatalf("after abandoned streams: %v %v", c.final.Kind, c.final.Err)
	}
	if g1 := settleGoroutines(g0); g1 > g0 {
		t.Errorf("goroutines %d → %d after abandoned streams", g0, g1)
	}
}

// TestFaultWeightValuesCorrupted: a same-size change inside the tensor
// data (bit rot, a half-finished copy over the old file) is not visible to
// Load (only `zonos models --verify`'s hash sees it), so the engine must
// survive running on NaN weights: the utterance ends, nothing panics.
func TestFaultWeightValuesCorrupted(t *testing.T) {
	zd := copyPack(t, "zonos-hybrid-tiny")
	p := filepath.Join(zd, "model.safetensors")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) - 256<<10; i < len(data); i++ {
		data[i] = 0xff // NaN in float32, bf16 and f16 alike
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Load(cpu.New(0), PathsFromDirs(zd, golden.Pack(t, "dac-tiny")))
	if err != nil {
		t.Logf("refused at load: %v", err)
		return
	}
	s, err := e.Synthesize(context.Background(), shortRequest())
	if err != nil {
		t.Fatal(err)
	}
	c := drain(s)
	nans := 0
	for _, v := range c.pcm {
		if v != v {
			nans++
		}
	}
	t.Logf("NaN weights: %v after %d frames, %d samples (%d NaN), err %v", c.final.Kind, c.frames, len(c.pcm), nans, c.final.Err)
	if c.final.Kind != Done && c.final.Kind != Failed {
		t.Fatalf("stream ended without Done or Failed")
	}
}

// oomBackend is the CPU backend with the CUDA allocator's out-of-memory
// behaviour injected (gpu/memory.go): once its allocation budget is spent,
// Upload returns the error and every other allocating call panics with it.
// It stands in for "GPU out of memory" on machines without one.
type oomBackend struct {
	compute.Backend
	armed  atomic.Bool
	budget atomic.Int64
}

const oomMessage = "gpu: out of device memory: 1.00 GiB needed for one more tensor, 0.10 GiB free of 80.00 GiB on the device (simulated); close other GPU programs, or run on the CPU with --backend cpu"

func (b *oomBackend) full() bool { return b.armed.Load() && b.budget.Add(-1) < 0 }

func (b *oomBackend) Upload(dt compute.DType, shape []int, raw []byte) (compute.Tensor, error) {
	if b.full() {
		return nil, errors.New(oomMessage)
	}
	return b.Backend.Upload(dt, shape, raw)
}

func (b *oomBackend) FromF32(data []float32, shape ...int) compute.Tensor {
	if b.full() {
		panic(oomMessage)
	}
	return b.Backend.FromF32(data, shape...)
}

func (b *oomBackend) Zeros(shape ...int) compute.Tensor {
	if b.full() {
		panic(oomMessage)
	}
	return b.Backend.Zeros(shape...)
}

func (b *oomBackend) Linear(x, w, bias compute.Tensor) compute.Tensor {
	if b.full() {
		panic(oomMessage)
	}
	return b.Backend.Linear(x, w, bias)
}

// TestFaultOutOfMemoryAtLoad: the device fills up while the Zonos weights
// (Upload: an error) or the DAC weights (FromF32: a panic) go onto it. Load
// returns an error carrying the allocator's message, at every point of the
// load; nothing panics out of Load.
func TestFaultOutOfMemoryAtLoad(t *testing.T) {
	paths := PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny"))
	for _, budget := range []int64{0, 10, 50, 100, 200, 400} {
		b := &oomBackend{Backend: cpu.New(0)}
		b.armed.Store(true)
		b.budget.Store(budget)
		e, err := Load(b, paths)
		if err == nil {
			t.Logf("budget %d allocations: loaded", budget)
			if e == nil {
				t.Fatal("nil engine without an error")
			}
			continue
		}
		if l := firstLine(err); !strings.Contains(l, "out of device memory") || !strings.Contains(l, "--backend cpu") {
			t.Errorf("budget %d: %v", budget, err)
		}
		t.Logf("budget %d allocations: %s", budget, firstLine(err))
	}
}

// TestFaultOutOfMemoryMidUtterance: the device fills up during generation
// (caches, activations). The utterance ends with Failed carrying the
// allocator's message instead of the process dying; the engine then serves
// the next request exactly as a fresh one would.
func TestFaultOutOfMemoryMidUtterance(t *testing.T) {
	paths := PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny"))
	b := &oomBackend{Backend: cpu.New(0)}
	e, err := Load(b, paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int64{0, 3, 40, 400} {
		b.budget.Store(budget)
		b.armed.Store(true)
		s, err := e.Synthesize(context.Background(), shortRequest())
		if err != nil {
			t.Fatal(err)
		}
		c := drain(s)
		b.armed.Store(false)
		if c.final.Kind != Failed || !strings.Contains(c.final.Err.Error(), "out of device memory") || s.Wait() == nil {
			t.Fatalf("budget %d: %v %v after %d frames", budget, c.final.Kind, c.final.Err, c.frames)
		}
		t.Logf("budget %d: failed after %d frames, %d samples: %s", budget, c.frames, len(c.pcm), firstLine(c.final.Err))
	}
	got := drain(mustSynthesize(t, e, shortRequest()))
	fresh, err := Load(&oomBackend{Backend: cpu.New(0)}, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := drain(mustSynthesize(t, fresh, shortRequest()))
	if got.final.Kind != Done || len(got.pcm) != len(want.pcm) {
		t.Fatalf("after the faults: %v, %d samples; fresh engine %d", got.final.Kind, len(got.pcm), len(want.pcm))
	}
	for i := range want.pcm {
		if got.pcm[i] != want.pcm[i] {
			t.Fatalf("sample %d after the faults %g, fresh engine %g", i, got.pcm[i], want.pcm[i])
		}
	}
}

func mustSynthesize(t *testing.T, e *Engine, r Request) *Stream {
	t.Helper()
	s, err := e.Synthesize(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFaultOutOfMemoryInBatch: the device runs out of memory during a
// step the batch shares. Every stream in it ends with Failed carrying the
// allocator's message (the batch's state is dropped: it cannot be
// trusted), and the engine then serves streams at once again, a stream
// alone exactly as a fresh engine would.
func TestFaultOutOfMemoryInBatch(t *testing.T) {
	paths := PathsFromDirs(golden.Pack(t, "zonos-hybrid-tiny"), golden.Pack(t, "dac-tiny"))
	b := &oomBackend{Backend: cpu.New(0)}
	e, err := Load(b, paths)
	if err != nil {
		t.Fatal(err)
	}
	long := shortRequest()
	long.FixedFrames = 120
	// A decodes alone; B arrives once A has frames, joins the batch, and
	// the batch adopts A.
	a := mustSynthesize(t, e, long)
	for ev := range a.Events() {
		if ev.Kind == FirstFrame {
			break
		}
	}
	bs := mustSynthesize(t, e, long)
	for ev := range bs.Events() {
		if ev.Kind == FirstFrame {
			break
		}
	}
	b.budget.Store(0)
	b.armed.Store(true)
	ca, cb := make(chan collected, 1), make(chan collected, 1)
	go func() { ca <- drain(a) }()
	go func() { cb <- drain(bs) }()
	for name, c := range map[string]collected{"first": <-ca, "second": <-cb} {
		if c.final.Kind != Failed || !strings.Contains(c.final.Err.Error(), "out of device memory") {
			t.Errorf("%s stream: %v %v, want Failed with the allocator's message", name, c.final.Kind, c.final.Err)
		}
	}
	b.armed.Store(false)
	if st := e.Load(); st.Batched == 0 {
		t.Fatalf("the streams never shared a step: %+v", st)
	}
	// Two at once again, then one alone against a fresh engine.
	x, y := mustSynthesize(t, e, shortRequest()), mustSynthesize(t, e, shortRequest())
	cx, cy := make(chan collected, 1), make(chan collected, 1)
	go func() { cx <- drain(x) }()
	go func() { cy <- drain(y) }()
	if gx, gy := <-cx, <-cy; gx.final.Kind != Done || gy.final.Kind != Done {
		t.Fatalf("after the fault, two at once: %v %v (%v %v)", gx.final.Kind, gy.final.Kind, gx.final.Err, gy.final.Err)
	}
	got := drain(mustSynthesize(t, e, shortRequest()))
	fresh, err := Load(&oomBackend{Backend: cpu.New(0)}, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := drain(mustSynthesize(t, fresh, shortRequest()))
	if got.final.Kind != Done || !slices.Equal(got.pcm, want.pcm) {
		t.Fatalf("after the fault: %v, %d samples; a fresh engine %d, or they differ", got.final.Kind, len(got.pcm), len(want.pcm))
	}
}
