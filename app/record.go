package app

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"
)

// Microphone limits: under 3 s a voice embedding is unreliable; 30 s is
// plenty and bounds the buffer.
const (
	MinRecording = 3 * time.Second
	MaxRecording = 30 * time.Second
	recordRate   = 44100
)

// malgoNullBackend is miniaudio's real null backend (malgo v0.11.24 skips
// ma_backend_custom in its enumeration, so BackendNull is off by one;
// docs/PLATFORM.md and audio's nullBackend). Tests record silence from it.
const malgoNullBackend = malgo.Backend(malgo.BackendNull + 1)

// Recorder captures the default microphone into memory. The capture
// callback only copies into a preallocated buffer and publishes the count
// and level with atomics; it stops taking samples at MaxRecording.
type Recorder struct {
	ctx   *malgo.AllocatedContext
	dev   *malgo.Device
	buf   []float32
	n     atomic.Int64
	level atomic.Uint32 // float32 bits: peak of the latest callback
	full  chan struct{}
	once  sync.Once
	stop  sync.Once
}

// StartRecording opens the default capture device (null: the null
// backend, for tests) and starts recording.
func StartRecording(null bool) (*Recorder, error) {
	var backends []malgo.Backend
	if null {
		backends = []malgo.Backend{malgoNullBackend}
	}
	ctx, err := malgo.InitContext(backends, malgo.ContextConfig{}, nil)
	if err != nil {
		return nil, fmt.Errorf("microphone: no sound system found (%v); install PulseAudio, PipeWire or ALSA, or open a clip instead", err)
	}
	r := &Recorder{ctx: ctx, buf: make([]float32, int(MaxRecording/time.Second)*recordRate), full: make(chan struct{})}
	dc := malgo.DefaultDeviceConfig(malgo.Capture)
	dc.Capture.Format = malgo.FormatF32
	dc.Capture.Channels = 1
	dc.SampleRate = recordRate
	r.dev, err = malgo.InitDevice(ctx.Context, dc, malgo.DeviceCallbacks{Data: r.onData})
	if err != nil {
		ctx.Uninit()
		ctx.Free()
		return nil, fmt.Errorf("microphone: cannot open a capture device (%v); check that one is connected and that this program may use it, or open a clip instead", err)
	}
	if err := r.dev.Start(); err != nil {
		r.dev.Uninit()
		ctx.Uninit()
		ctx.Free()
		return nil, fmt.Errorf("microphone: cannot start recording (%v); access may be denied", err)
	}
	return r, nil
}

func (r *Recorder) onData(_, in []byte, frames uint32) {
	if len(in) < 4 {
		return
	}
	src := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(in))), len(in)/4)
	var peak float32
	for _, v := range src {
		peak = max(peak, float32(math.Abs(float64(v))))
	}
	r.level.Store(math.Float32bits(peak))
	n := int(r.n.Load())
	k := copy(r.buf[n:], src)
	r.n.Store(int64(n + k))
	if n+k == len(r.buf) {
		r.once.Do(func() { close(r.full) })
	}
}

// Level is the latest peak level, 0…1.
func (r *Recorder) Level() float32 { return min(1, math.Float32frombits(r.level.Load())) }

// Elapsed is how much has been recorded.
func (r *Recorder) Elapsed() time.Duration {
	return time.Duration(r.n.Load()) * time.Second / recordRate
}

// Full is closed when MaxRecording is reached.
func (r *Recorder) Full() <-chan struct{} { return r.full }

// Stop ends the recording and returns it; a recording shorter than
// MinRecording is an error.
func (r *Recorder) Stop() (*Clip, error) {
	r.stop.Do(func() {
		r.dev.Uninit() // stops the device; no callback runs after this
		r.ctx.Uninit()
		r.ctx.Free()
	})
	n := int(r.n.Load())
	d := time.Duration(n) * time.Second / recordRate
	if d < MinRecording {
		return nil, fmt.Errorf("recording is %.1f s; record at least %v of speech", d.Seconds(), MinRecording)
	}
	return &Clip{Name: "microphone", Samples: append([]float32(nil), r.buf[:n]...), Rate: recordRate}, nil
}
