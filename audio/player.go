package audio

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gen2brain/malgo"
)

// Player defaults. Playback latency is PreRoll plus the device buffer
// (Period × Periods): 50 + 30 = 80 ms by default. 10 ms periods keep the
// device buffer small while staying far above the scheduling jitter of a
// desktop; 3 periods is miniaudio's own default; 50 ms of pre-roll covers
// the gap between the DAC streamer's first small chunk and its steady
// chunks when the engine runs near real time (raise it on slow machines,
// lower it on a GPU that is many times real time).
const (
	DefaultPeriod  = 10 * time.Millisecond
	DefaultPeriods = 3
	DefaultPreRoll = 50 * time.Millisecond
	DefaultBuffer  = 30 * time.Second
)

// ErrDeviceLost is returned (wrapped) by Write, WriteAll and Err after the
// output device stopped on its own (unplugged, sound server gone). The
// engine keeps writing its WAV file; only playback is over.
var ErrDeviceLost = errors.New("audio: the output device stopped (unplugged or sound server gone)")

// PlayerConfig chooses the device and the buffering. Zero values mean the
// defaults above.
type PlayerConfig struct {
	// Device selects the output: "" for the system default, else an ID, a
	// name, or a unique part of a name as ListDevices reports them.
	Device string
	// Null plays into miniaudio's null backend: no sound card, the
	// callback runs on a timer (tests, CI, headless measurements).
	Null bool
	// Period is the device period (the callback's interval).
	Period time.Duration
	// Periods is the device buffer length in periods.
	Periods int
	// PreRoll is how much audio of an utterance must be buffered before
	// its playback starts (less if the utterance ends first). 0 uses
	// DefaultPreRoll; a negative value starts with the first sample.
	PreRoll time.Duration
	// Buffer is the ring's capacity: how far the engine may run ahead of
	// playback before WriteAll waits.
	Buffer time.Duration
}

func (c PlayerConfig) withDefaults() (PlayerConfig, error) {
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.Periods == 0 {
		c.Periods = DefaultPeriods
	}
	if c.PreRoll == 0 {
		c.PreRoll = DefaultPreRoll
	}
	if c.PreRoll < 0 {
		c.PreRoll = 0
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	switch {
	case c.Period < time.Millisecond || c.Period > time.Second:
		return c, fmt.Errorf("audio player: period %v is out of range; use 1ms..1s (default %v)", c.Period, DefaultPeriod)
	case c.Periods < 1 || c.Periods > 16:
		return c, fmt.Errorf("audio player: %d periods is out of range; use 1..16 (default %d)", c.Periods, DefaultPeriods)
	case c.Buffer < 2*c.PreRoll || c.Buffer < 10*c.Period:
		return c, fmt.Errorf("audio player: buffer %v is too small for pre-roll %v and period %v; make it at least twice the pre-roll and ten periods", c.Buffer, c.PreRoll, c.Period)
	}
	return c, nil
}

// Player plays 44.1 kHz mono float32 samples on an output device as they
// are written. The device runs from NewPlayer to Close, playing silence
// while there is nothing to play, so an utterance's first sound waits only
// for its pre-roll and the device buffer.
//
// One producer goroutine calls BeginUtterance, Write/WriteAll,
// EndUtterance and Cancel; getters may be called from anywhere. The device
// callback only copies from the ring: it never blocks, allocates or takes a
// lock of ours (malgo's dispatcher itself takes a mutex that is contended
// only while a device is being created or destroyed).
type Player struct {
	cfg     PlayerConfig
	ring    *Ring
	preroll int // samples
	epoch   time.Time
	actx    *audioContext
	dev     *malgo.Device
	pin     runtime.Pinner // keeps the chosen device ID in place for miniaudio
	device  Device

	latest atomic.Pointer[Utterance] // the producer's most recent utterance
	head   atomic.Pointer[Utterance] // the first utterance, until the callback takes it

	// Shared counters (callback writes, anyone reads).
	callbacks atomic.Int64
	played    atomic.Int64 // samples taken from the ring and played
	// settled is the ring position up to which the callback has finished
	// its bookkeeping (played counts, utterance credits): Done reads it
	// rather than the ring's Consumed, which moves inside Read, before the
	// callback has credited what it read.
	settled    atomic.Uint64
	underruns  atomic.Int64
	lastFrames atomic.Uint32
	paused     atomic.Bool // Pause: the callback plays silence and takes nothing

	// Callback-owned state: touched only by the device callback.
	cb struct {
		playing bool
		cur     *Utterance
	}

	stopping atomic.Bool // Close is stopping the device: not a loss
	lost     atomic.Bool
	lostCh   chan struct{}
	lostOnce sync.Once
	closeMu  sync.Mutex
	closed   bool
}

// NewPlayer opens and starts the output device. Errors say which device
// failed and what to do; a machine without a sound card fails here (use
// Null for tests, or write a WAV file).
func NewPlayer(cfg PlayerConfig) (*Player, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ring, err := NewRing(cfg.Buffer, SampleRate)
	if err != nil {
		return nil, fmt.Errorf("audio player: %w", err)
	}
	p := &Player{
		cfg:     cfg,
		ring:    ring,
		preroll: int(int64(cfg.PreRoll) * SampleRate / int64(time.Second)),
		epoch:   time.Now(),
		lostCh:  make(chan struct{}),
	}
	if p.actx, err = newAudioContext(cfg.Null); err != nil {
		return nil, err
	}
	dc := malgo.DefaultDeviceConfig(malgo.Playback)
	dc.Playback.Format = malgo.FormatF32 // miniaudio converts if the device wants another format
	dc.Playback.Channels = 1
	dc.SampleRate = SampleRate
	dc.PeriodSizeInFrames = uint32(int64(cfg.Period) * SampleRate / int64(time.Second))
	dc.Periods = uint32(cfg.Periods)
	dc.PerformanceProfile = malgo.LowLatency
	p.device = Device{Name: "default output"}
	if cfg.Device != "" {
		ds, err := p.actx.devices()
		if err != nil {
			p.actx.close()
			return nil, err
		}
		d, err := findDevice(ds, cfg.Device)
		if err != nil {
			p.actx.close()
			return nil, err
		}
		p.device = d
		id := new(malgo.DeviceID)
		*id = d.id
		p.pin.Pin(id)
		dc.Playback.DeviceID = unsafe.Pointer(id)
	}
	p.dev, err = malgo.InitDevice(p.actx.ctx.Context, dc, malgo.DeviceCallbacks{Data: p.onData, Stop: p.onStop})
	if err != nil {
		p.pin.Unpin()
		p.actx.close()
		return nil, fmt.Errorf("audio: cannot open output device %q: %w%s; choose another output device, or write the audio to a WAV file instead", p.device.Name, err, p.actx.log.last())
	}
	if err := p.dev.Start(); err != nil {
		p.dev.Uninit()
		p.pin.Unpin()
		p.actx.close()
		return nil, fmt.Errorf("audio: cannot start output device %q: %w%s; check that no other program holds it exclusively", p.device.Name, err, p.actx.log.last())
	}
	return p, nil
}

// Device is the device playing (Name "default output" for the default).
func (p *Player) Device() Device { return p.device }

// Latency is the configured playback latency: pre-roll plus device buffer.
func (p *Player) Latency() time.Duration {
	return p.cfg.PreRoll + p.cfg.Period*time.Duration(p.cfg.Periods)
}

// Config is the configuration in effect, defaults filled in.
func (p *Player) Config() PlayerConfig { return p.cfg }

// onData is the device callback: copy from the ring, pad with silence,
// count underruns, timestamp first sounds. No blocking, allocation or
// locks.
func (p *Player) onData(out, _ []byte, frames uint32) {
	buf := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(out))), len(out)/4)
	p.fill(buf, frames)
	p.settled.Store(p.ring.Consumed()) // after every count the period changed
}

// fill is onData's work on the period's samples.
func (p *Player) fill(buf []float32, frames uint32) {
	p.callbacks.Add(1)
	p.lastFrames.Store(frames)
	latest := p.latest.Load()

	if p.paused.Load() {
		p.ring.Read(buf[:0]) // apply a pending Cancel so Done sees it
		clear(buf)
		return
	}
	if !p.cb.playing {
		p.ring.Read(buf[:0]) // apply a pending Cancel so Done sees it
		buffered := p.ring.Len()
		ended := latest != nil && latest.ended.Load()
		if buffered > 0 && (buffered >= p.preroll || ended) {
			p.cb.playing = true
		} else {
			clear(buf)
			return
		}
	}

	n := p.ring.Read(buf)
	clear(buf[n:])
	if n > 0 {
		end := p.ring.Consumed()
		start := end - uint64(n)
		at := p.since() // the period's start: the time its first sample is handed over
		if p.cb.cur == nil {
			if p.cb.cur = p.head.Load(); p.cb.cur != nil {
				p.head.Store(nil) // from here the chain is reached through cb.cur only
			}
		}
		// Credit every utterance the played range touches, moving cur to
		// the one the next sample belongs to.
		for u := p.cb.cur; u != nil; {
			u.credit(start, end, at)
			next := u.next.Load()
			if next == nil || next.start > end {
				break
			}
			p.cb.cur, u = next, next
		}
		p.played.Add(int64(n))
	}
	if n == len(buf) {
		return
	}
	// The ring ran short. After the last sample of an ended utterance this
	// is the end of playback, not an underrun.
	if latest == nil || !latest.ended.Load() || p.ring.Consumed() < latest.end.Load() {
		p.underruns.Add(1)
		if latest != nil {
			latest.underruns.Add(1)
		}
		return
	}
	p.cb.playing = false
}

// since is the time since the player's epoch, in nanoseconds (+1 so that 0
// means "not yet").
func (p *Player) since() int64 { return int64(time.Since(p.epoch)) + 1 }

// onStop runs when the device stops: by Close, or on its own (device loss).
func (p *Player) onStop() {
	if p.stopping.Load() {
		return
	}
	p.lost.Store(true)
	p.lostOnce.Do(func() { close(p.lostCh) })
}

// Lost is closed when the device stops on its own; Err then returns
// ErrDeviceLost.
func (p *Player) Lost() <-chan struct{} { return p.lostCh }

// Err is nil while playback works and wraps ErrDeviceLost after a loss.
func (p *Player) Err() error {
	if p.lost.Load() {
		return fmt.Errorf("%w: %q", ErrDeviceLost, p.device.Name)
	}
	return nil
}

// BeginUtterance marks the start of a new utterance: samples written from
// now on belong to it, and the previous utterance (if not ended) ends here.
// Audio of an earlier utterance still in the ring plays first (Cancel drops
// it). Producer only.
func (p *Player) BeginUtterance() *Utterance {
	u := &Utterance{p: p, start: p.ring.Written()}
	if prev := p.latest.Load(); prev != nil {
		if !prev.ended.Load() {
			prev.finish(u.start)
		}
		prev.next.Store(u)
	} else {
		p.head.Store(u)
	}
	p.latest.Store(u)
	return u
}

// EndUtterance marks the last sample of the current utterance as written:
// a tail shorter than the pre-roll starts playing, and an empty ring after
// it is the end of playback rather than an underrun. Producer only.
func (p *Player) EndUtterance() {
	if u := p.latest.Load(); u != nil && !u.ended.Load() {
		u.finish(p.ring.Written())
	}
}

// Cancel drops every sample not yet played and ends the current utterance.
// Producer only.
func (p *Player) Cancel() {
	p.EndUtterance()
	p.ring.Reset()
}

// Pause holds playback at the next device period: the callback plays
// silence and takes nothing from the ring, so Played and the underrun
// counts stand still (a pause is not an underrun) and Resume carries on
// with the very next sample. Writers keep filling the ring and then wait
// in WriteAll, so a producer runs ahead of a paused player by at most the
// ring's capacity (PlayerConfig.Buffer). Cancel still drops what is
// queued; the player stays paused until Resume. Safe from any goroutine.
func (p *Player) Pause() { p.paused.Store(true) }

// Resume lets a paused player go on from where it stopped.
func (p *Player) Resume() { p.paused.Store(false) }

// Paused reports whether playback is held by Pause.
func (p *Player) Paused() bool { return p.paused.Load() }

// Write queues as many samples as fit without waiting and returns how many
// were taken. Producer only.
func (p *Player) Write(samples []float32) (int, error) {
	if err := p.Err(); err != nil {
		return 0, err
	}
	return p.ring.Write(samples), nil
}

// WriteAll queues all samples, waiting for room while the ring is full
// (the engine runs ahead of real time). It returns early with the context's
// error or ErrDeviceLost. Producer only.
func (p *Player) WriteAll(ctx context.Context, samples []float32) error {
	if err := p.Err(); err != nil {
		return err
	}
	for {
		samples = samples[p.ring.Write(samples):]
		if len(samples) == 0 {
			return nil
		}
		if err := p.Err(); err != nil {
			return err
		}
		if err := p.wait(ctx); err != nil {
			return err
		}
	}
}

// wait sleeps one period (the callback frees about that much) or until
// the context ends. Polling keeps the callback free of any signalling.
func (p *Player) wait(ctx context.Context) error {
	t := time.NewTimer(p.cfg.Period)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.lostCh:
		return p.Err()
	case <-t.C:
		return nil
	}
}

// Buffered is the number of samples waiting in the ring.
func (p *Player) Buffered() int { return p.ring.Len() }

// Played is the number of samples played since NewPlayer (silence not
// counted).
func (p *Player) Played() int64 { return p.played.Load() }

// Underruns counts device periods, since NewPlayer, that found the ring
// short after an utterance's playback had started and before its end.
func (p *Player) Underruns() int64 { return p.underruns.Load() }

// Callbacks counts device callbacks since NewPlayer.
func (p *Player) Callbacks() int64 { return p.callbacks.Load() }

// PeriodFrames is the frame count of the latest callback: the period the
// device actually uses (0 before the first callback).
func (p *Player) PeriodFrames() int { return int(p.lastFrames.Load()) }

// Close stops the device and releases it. Queued audio is not waited for
// (use Utterance.Wait first). Idempotent.
func (p *Player) Close() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.stopping.Store(true)
	var err error
	if p.dev.IsStarted() {
		if e := p.dev.Stop(); e != nil {
			err = fmt.Errorf("audio: stopping output device %q: %w", p.device.Name, e)
		}
	}
	p.dev.Uninit()
	p.pin.Unpin()
	p.actx.close()
	return err
}

// Utterance is one stretch of speech as the player sees it: when its first
// sample was played, how many samples were played, underruns while it
// played, and when it finished. Its getters are safe from any goroutine.
type Utterance struct {
	p     *Player
	next  atomic.Pointer[Utterance] // the utterance begun after this one
	start uint64                    // ring position of its first sample
	end   atomic.Uint64
	ended atomic.Bool

	firstSound atomic.Int64 // Player.since() of its first played sample; 0 = not yet
	finished   atomic.Int64 // Player.since() when its last sample was played
	played     atomic.Int64
	underruns  atomic.Int64
}

// finish fixes the end position (producer side).
func (u *Utterance) finish(end uint64) {
	u.end.Store(end)
	u.ended.Store(true)
}

// credit records that ring positions [a, b) were played at time at
// (callback side).
func (u *Utterance) credit(a, b uint64, at int64) {
	lo, hi := max(a, u.start), b
	ended := u.ended.Load()
	end := u.end.Load()
	if ended {
		hi = min(hi, end)
	}
	if hi > lo {
		if u.firstSound.Load() == 0 {
			u.firstSound.Store(at + int64(lo-a)*int64(time.Second)/SampleRate)
		}
		u.played.Add(int64(hi - lo))
	}
	if ended && a < end && b >= end && end > u.start && u.finished.Load() == 0 { // its last sample was in [a, b)
		u.finished.Store(at + int64(end-a)*int64(time.Second)/SampleRate)
	}
}

// FirstSound is when the callback handed the utterance's first sample to
// the device (the device buffer's latency, ≤ Period × Periods, comes on
// top), and false before that.
func (u *Utterance) FirstSound() (time.Time, bool) {
	v := u.firstSound.Load()
	if v == 0 {
		return time.Time{}, false
	}
	return u.p.epoch.Add(time.Duration(v - 1)), true
}

// Played is the number of the utterance's samples handed to the device so
// far: what a "keep only what was played" WAV is truncated to on cancel.
func (u *Utterance) Played() int64 { return u.played.Load() }

// Underruns counts periods that found the ring short while this utterance
// was the one being waited for.
func (u *Utterance) Underruns() int64 { return u.underruns.Load() }

// Done reports whether the utterance has ended and all of it was played
// (or dropped by Cancel), with the callback's counts (Played, Finished)
// already including its last samples.
func (u *Utterance) Done() bool {
	return u.ended.Load() && u.p.settled.Load() >= u.end.Load()
}

// Finished is when the last sample was handed to the device, and false
// before that (or if Cancel dropped the end).
func (u *Utterance) Finished() (time.Time, bool) {
	v := u.finished.Load()
	if v == 0 {
		return time.Time{}, false
	}
	return u.p.epoch.Add(time.Duration(v - 1)), true
}

// Wait returns when the utterance is Done, the context ends, or the device
// is lost. Call EndUtterance first, or it waits for the next utterance.
func (u *Utterance) Wait(ctx context.Context) error {
	for !u.Done() {
		if err := u.p.Err(); err != nil {
			return err
		}
		if err := u.p.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
