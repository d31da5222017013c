package app

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"zonostream/audio"
	"zonostream/engine"
	"zonostream/engine/zonos"
)

// Job is one press of Speak: the settings and the clips chosen.
type Job struct {
	Settings Settings
	Speaker  *Clip // nil: no speaker clip
	Prefix   *Clip // nil: no audio prefix
	// SpeakerEmbedding is a saved voice's embedding (the voice library),
	// used as is when there is no speaker clip.
	SpeakerEmbedding []float32
}

// ErrBusy is returned by Speak and Play while something is playing.
var ErrBusy = errors.New("already speaking: press Stop (Esc) first")

// Speaker runs utterances on their own goroutines: load the model, embed
// the voice, stream the engine's audio to the output, the meters, the
// waveform and the history. Its callbacks come from those goroutines; the
// window moves them to the UI goroutine with fyne.Do.
type Speaker struct {
	Models  Models
	Voice   VoiceEncoder // nil: voice cloning unavailable
	Meters  *Meters
	Wave    *Waveform
	History *History

	// MaxSeconds bounds each sentence group's audio (0: the engine's 30 s).
	MaxSeconds float64

	// OnNotice receives messages for the user (never nil after New).
	OnNotice func(string)
	// OnEnd is called after an utterance or playback ended (history,
	// buttons). It may be nil.
	OnEnd func(*Utterance)
	// Engines, when set, hears which engine the utterances use (the
	// in-app speech server follows it).
	Engines EngineWatcher

	mu      sync.Mutex
	out     Output
	cancel  context.CancelFunc
	done    chan struct{}
	preload context.CancelFunc // a background load (Preload) in progress
	prepare context.CancelFunc // a background voice encoding (PrepareVoice) in progress
	voices  voiceCache
	rng     *rand.Rand
}

// NewSpeaker wires a speaker to models and an output (nil: none, with why
// saying what went wrong opening it).
func NewSpeaker(m Models, out Output, why string) *Speaker {
	s := &Speaker{
		Models:   m,
		Meters:   NewMeters(),
		Wave:     NewWaveform(600, 441),
		History:  NewHistory(HistoryLimit, HistorySamples),
		OnNotice: func(string) {},
		out:      out,
		rng:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5a0e)),
	}
	if m != nil {
		s.Meters.SetBackend(m.Backend())
	}
	if out != nil {
		s.Meters.SetDevice(out.Name())
	}
	if out == nil {
		if why == "" {
			why = "no audio output"
		}
		s.Meters.SetOutput(why + " — speech is kept in the history and can be saved as WAV")
	}
	return s
}

// SetOutput switches to another sound output between utterances; the old
// one is closed. It refuses while speech is running or playing.
func (s *Speaker) SetOutput(out Output) error {
	if s.Busy() {
		return fmt.Errorf("stop the current speech before changing the sound output")
	}
	s.mu.Lock()
	old := s.out
	s.out = out
	s.mu.Unlock()
	if c, ok := old.(interface{ Close() error }); ok && old != out {
		c.Close()
	}
	s.Meters.SetOutput("")
	if out != nil {
		s.Meters.SetDevice(out.Name())
	}
	return nil
}

// Output is the current output, nil when there is none.
func (s *Speaker) Output() Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

func (s *Speaker) dropOutput(err error) {
	s.mu.Lock()
	s.out = nil
	s.mu.Unlock()
	msg := fmt.Sprintf("playback failed (%v) — generation continues; the audio is kept in the history and can be saved as WAV", err)
	s.Meters.SetOutput(msg)
	s.OnNotice(msg)
}

// Busy reports whether an utterance or a playback is running.
func (s *Speaker) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done != nil
}

// Done is closed when the current run ends (nil when idle).
func (s *Speaker) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Wait blocks until the current run (if any) ended.
func (s *Speaker) Wait() {
	if d := s.Done(); d != nil {
		<-d
	}
}

// Stop cancels the current utterance or playback.
func (s *Speaker) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	if s.preload != nil {
		s.preload()
	}
}

// PrepareVoice starts encoding speaker clip c in the background (nil, or
// no encoder: nothing), so that Speak finds its embedding ready instead
// of encoding it first (on the CPU backend that is minutes for a 10 s
// clip). It runs only while nothing is being spoken, since it shares the
// backend with the utterance; Speak waits for an encoding in progress
// rather than starting another. A later clip cancels the encoding of the
// earlier one. Errors are left for Speak to report.
func (s *Speaker) PrepareVoice(c *Clip) {
	s.mu.Lock()
	if s.prepare != nil {
		s.prepare()
		s.prepare = nil
	}
	if c == nil || s.Voice == nil || s.done != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.prepare = cancel
	enc := s.Voice
	s.mu.Unlock()
	go func() {
		defer cancel()
		_, _ = s.voices.embed(ctx, enc, c) // a failure is Speak's to report, when it needs the voice
	}()
}

// EngineWatcher hears of the engines a Speaker loads, on the Speaker's
// goroutines: Loading before a variant's model is loaded (the model in use
// so far may be let go: one model is resident at a time), Loaded once it
// is loaded and warmed.
type EngineWatcher interface {
	Loading(variant string)
	Loaded(variant string, e *engine.Engine)
}

// load is Models.Load, told to Engines.
func (s *Speaker) load(ctx context.Context, variant string) (*engine.Engine, error) {
	if s.Engines != nil {
		s.Engines.Loading(variant)
	}
	return s.Models.Load(ctx, variant)
}

// loaded tells Engines of a loaded, warmed engine.
func (s *Speaker) loaded(variant string, e *engine.Engine) {
	if s.Engines != nil {
		s.Engines.Loaded(variant, e)
	}
}

// Preload loads the variant's model and warms it (engine.Warmup with
// req's language, knobs and length limit) in the background, so that the
// first Speak starts speaking instead of loading for seconds. An utterance
// started meanwhile waits for that same load (Models.Load serialises), not
// for another. Stop cancels it. A failure goes to OnNotice; the first
// Speak tries again and reports its own error. done, when not nil, is
// called when the preload has ended.
func (s *Speaker) Preload(variant string, req engine.Request, done func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.preload != nil {
		s.preload()
	}
	s.preload = cancel
	s.mu.Unlock()
	go func() {
		defer cancel()
		eng, err := s.load(ctx, variant)
		if err == nil {
			err = eng.Warmup(ctx, req)
		}
		if err == nil {
			s.loaded(variant, eng)
		}
		if err != nil && ctx.Err() == nil {
			s.OnNotice(fmt.Sprintf("Loading the %s model in the background failed: %v", variant, err))
		}
		if done != nil {
			done(err)
		}
	}()
}

// start claims the speaker for one run. A pause on the output belongs to
// the run it was made in: one still held (Space pressed as a reading
// ended) would leave the new run silent, its playback never done, so the
// output is resumed here, before the run begins any playback.
func (s *Speaker) start() (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return nil, nil, ErrBusy
	}
	if p, ok := s.out.(Pauser); ok {
		p.Resume()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	done := s.done
	return ctx, func() {
		cancel()
		s.mu.Lock()
		s.cancel, s.done = nil, nil
		s.mu.Unlock()
		close(done)
	}, nil
}

// Speak validates the job and starts it. Request errors (no text, all
// emotions at zero) come back at once; everything later arrives as a
// failed utterance in the history and a notice.
func (s *Speaker) Speak(job Job) (engine.Request, error) {
	req, notices, err := BuildRequest(job.Settings, Voice{Speaker: job.SpeakerEmbedding}, s.rng.Uint64)
	if err != nil {
		return req, err
	}
	req.MaxSeconds = s.MaxSeconds
	req.DiscardCodes = true // the app never reads Stream.Codes: memory stays flat with the text's length
	ctx, finish, err := s.start()
	if err != nil {
		return req, err
	}
	s.Wave.Reset()
	go func() {
		for _, n := range notices {
			s.OnNotice(n)
		}
		u := s.run(ctx, job, req, notices, nil)
		finish()
		if s.OnEnd != nil {
			s.OnEnd(u)
		}
	}()
	return req, nil
}

// run is one utterance; it always returns a history entry. tr, when not
// nil, follows the stream for the reading view.
func (s *Speaker) run(ctx context.Context, job Job, req engine.Request, notices []string, tr *readTrack) *Utterance {
	u := &Utterance{Text: historyText(req.Text), Language: req.Language, Seed: req.Seed, When: time.Now(), Notices: notices}
	notice := func(m string) {
		u.Notices = append(u.Notices, m)
		s.OnNotice(m)
	}
	eng, req, err := s.setUp(ctx, job, req, notice)
	if err == nil {
		err = s.utter(ctx, eng, req, u, notice, tr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			u.Outcome = PhaseStopped
		} else {
			u.Outcome, u.Err = PhaseFailed, err.Error()
			s.OnNotice(err.Error())
		}
	}
	if u.Outcome == "" {
		u.Outcome = PhaseDone
	}
	s.Meters.SetPhase(u.Outcome)
	return s.History.Add(u)
}

// setUp loads the model and turns the job's clips into the request's
// voice.
func (s *Speaker) setUp(ctx context.Context, job Job, req engine.Request, notice func(string)) (*engine.Engine, engine.Request, error) {
	s.Meters.SetPhase(PhaseLoading)
	eng, err := s.load(ctx, job.Settings.Variant)
	if err != nil {
		return nil, req, fmt.Errorf("loading the %s model: %w", job.Settings.Variant, err)
	}
	// Still in the loading phase: the one-time costs of a fresh engine
	// (espeak-ng's data, on the GPU the recorded decode step) are paid
	// here, not in this utterance's time to first audio. Other warm-up
	// errors are the request's own and come back from Synthesize below.
	if err := eng.Warmup(ctx, req); err != nil && ctx.Err() != nil {
		return nil, req, ctx.Err()
	}
	s.loaded(job.Settings.Variant, eng)
	if job.Speaker != nil && !job.Settings.IsUnconditional("speaker") {
		emb, err := s.voices.embed(ctx, s.Voice, job.Speaker)
		switch {
		case errors.Is(err, ErrNoVoiceEncoder), errors.Is(err, ErrSpeakerModelMissing):
			notice(err.Error())
		case err != nil:
			return nil, req, fmt.Errorf("speaker clip %s: %w", job.Speaker.Name, err)
		default:
			req.Speaker = emb
		}
	}
	if job.Prefix != nil {
		codes, err := encodePrefix(eng, job.Prefix)
		if err != nil {
			return nil, req, fmt.Errorf("prefix clip %s: %w", job.Prefix.Name, err)
		}
		req.AudioPrefix = codes
	}
	return eng, req, ctx.Err()
}

// utter streams req to the output, the meters, the waveform and u's audio
// (through the history's spool: long utterances go to disk as they
// stream). On a cancel u keeps what was heard. The error is the stream's
// (context.Canceled when stopped). tr, when not nil, gets the parts, the
// committed samples and the playback.
func (s *Speaker) utter(ctx context.Context, eng *engine.Engine, req engine.Request, u *Utterance, notice func(string), tr *readTrack) error {
	s.Meters.Begin(time.Now())
	stream, err := eng.Synthesize(ctx, req)
	if err != nil {
		return err
	}
	out := s.Output()
	var pb Playback
	if out != nil {
		pb = out.Begin()
	}
	stopPoll := s.pollPlayback(out, pb)
	defer stopPoll()
	if tr != nil {
		tr.playing(pb)
	}
	sp := s.History.spool()
	defer func() {
		if err := sp.finish(u); err != nil {
			notice(err.Error())
		}
		s.note(u, pb)
	}()

	var final engine.Event
	for ev := range stream.Events() {
		s.Meters.Observe(ev)
		switch ev.Kind {
		case engine.PartStart:
			if tr != nil {
				tr.part(ev.Part.Start, ev.Part.End, ev.Part.FirstSample)
			}
		case engine.Audio:
			sp.Write(ev.PCM)
			s.Wave.Push(ev.PCM)
			if tr != nil {
				tr.commit(len(ev.PCM))
			}
			if out != nil {
				if err := out.WriteAll(ctx, ev.PCM); err != nil && ctx.Err() == nil {
					s.dropOutput(err)
					out.Cancel()
					out = nil
				}
			}
		case engine.Notice:
			notice(ev.Message)
		case engine.Done, engine.Failed:
			final = ev
		}
	}
	u.Metrics = final.Metrics
	if tr != nil {
		tr.end(final.Kind == engine.Done) // every sample is committed: the last part ends here
	}
	if final.Kind == engine.Failed {
		if out != nil {
			out.Cancel()
			if errors.Is(final.Err, context.Canceled) {
				sp.Truncate(int(pb.Played())) // keep what was heard
			}
		}
		return final.Err
	}
	if out != nil {
		out.End()
		for !pb.Done() && out.Err() == nil && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if ctx.Err() != nil {
			out.Cancel()
			sp.Truncate(int(pb.Played()))
			return ctx.Err()
		} else if err := out.Err(); err != nil {
			s.dropOutput(err)
		}
	}
	return nil
}

// note copies the playback figures into the utterance.
func (s *Speaker) note(u *Utterance, pb Playback) {
	if pb == nil {
		return
	}
	if t, ok := pb.FirstSound(); ok {
		u.Sound, u.HadSound = t.Sub(u.When), true
	}
	snap := s.Meters.Snapshot()
	if snap.HasSound {
		u.Sound = snap.FirstSound
	}
}

// pollPlayback samples the output's counters into the meters every 10 ms
// until the returned stop is called.
func (s *Speaker) pollPlayback(out Output, pb Playback) (stop func()) {
	if out == nil || pb == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	sample := func() {
		b, c := out.Fill()
		t, _ := pb.FirstSound()
		s.Meters.Playback(b, c, pb.Underruns(), t)
	}
	go func() {
		defer wg.Done()
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				sample()
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// encodePrefix turns a clip into DAC codes for Request.AudioPrefix: the
// clip at the engine's rate, encoded by the engine (Engine.EncodePrefix).
func encodePrefix(eng *engine.Engine, c *Clip) ([][zonos.NumCodebooks]int32, error) {
	pcm := c.Samples
	if c.Rate != engine.SampleRate {
		var err error
		if pcm, err = audio.Resample(pcm, c.Rate, engine.SampleRate); err != nil {
			return nil, err
		}
	}
	return eng.EncodePrefix(pcm)
}

// Play plays samples (a clip) on the output.
func (s *Speaker) Play(pcm []float32, rate int) error {
	if rate != engine.SampleRate {
		var err error
		if pcm, err = audio.Resample(pcm, rate, engine.SampleRate); err != nil {
			return err
		}
	}
	return s.playFrom(func(write func([]float32) error) error { return write(pcm) })
}

// PlayUtterance plays a history entry, reading it from disk a second at a
// time when it is kept there.
func (s *Speaker) PlayUtterance(u *Utterance) error {
	return s.playFrom(u.EachPCM)
}

// playFrom plays what each hands to its write function.
func (s *Speaker) playFrom(each func(write func([]float32) error) error) error {
	out := s.Output()
	if out == nil {
		return fmt.Errorf("no audio output to play on; save the audio as WAV instead")
	}
	ctx, finish, err := s.start()
	if err != nil {
		return err
	}
	go func() {
		defer func() {
			finish()
			if s.OnEnd != nil {
				s.OnEnd(nil)
			}
		}()
		pb := out.Begin()
		if err := each(func(pcm []float32) error { return out.WriteAll(ctx, pcm) }); err != nil {
			out.Cancel()
			if ctx.Err() == nil && out.Err() != nil {
				s.dropOutput(err)
			} else if ctx.Err() == nil {
				s.OnNotice(err.Error())
			}
			return
		}
		out.End()
		for !pb.Done() && out.Err() == nil && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if ctx.Err() != nil {
			out.Cancel()
		}
	}()
	return nil
}
