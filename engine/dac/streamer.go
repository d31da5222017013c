package dac

import (
	"fmt"

	"zonostream/engine/compute"
)

// Codebooks is the number of codes in one Zonos frame (dac_44khz's
// n_codebooks); Streamer accepts frames of exactly this many codes.
const Codebooks = 9

// StreamConfig sets how much committed audio the Streamer waits for before
// it decodes, in frames of audio (one frame = hop samples, 11.61 ms at
// 44.1 kHz). Every emission costs a pass through every layer on top of
// its frames' own work (and, decoding by windows, the left context and the
// tail again), so small chunks buy latency with throughput.
type StreamConfig struct {
	// FirstChunk is the committed audio of the first emission: small for a
	// short time to first audio. ≥ 1. The first emission goes out as soon
	// as the audio of its last frame begins to be final: more than
	// FirstChunk−1 frames, at most FirstChunk. The right tail is not a
	// whole number of frames, so waiting for the whole last frame would
	// cost one more decode step before the first sample.
	FirstChunk int
	// Chunk is the committed audio of the steady emissions: larger for
	// throughput once playback is ahead. Emissions ramp up from
	// FirstChunk, doubling, until they reach Chunk: emission k waits for
	// min(Chunk, FirstChunk·2^k) frames, so while one plays the next
	// (at most twice as long) is generated, which a generator faster than
	// about twice real time keeps ahead of playback. ≥ 1.
	Chunk int
}

// DefaultStreamConfig starts with at most 1 frame (up to 11.6 ms of audio;
// 363 samples on dac_44khz, whose right tail is 4757 samples; every frame
// fewer in the first chunk is one decode step less before the first
// sample) and ramps 2, 4, 8, 16 up to 32-frame chunks (372 ms). Every
// emission pays a pass through every layer, so larger steady chunks
// vocode faster; on an H200 (2026-11-30, two rounds each, same binary)
// the bench's streamed vocoder ran 90.8 / 89.3× real time with 16-frame
// chunks, 101.6 / 103.3× with 32, 110.2 / 113.4× with 64 and 112.9 /
// 109.2× with 128, with TTFA and generation unchanged;
// the steady frame stayed at 1.58–1.60 ms up to 32 and rose to 1.66 ms
// at 64 (larger emissions contend longer with the decode steps beside
// them). Sonata's TTFA figure was measured at 16 (docs/ZONOS.md); the
// first emissions here are the same either way.
var DefaultStreamConfig = StreamConfig{FirstChunk: 1, Chunk: 32}

// want is the committed audio, in frames, emission k waits for.
func (sc StreamConfig) want(k int) int {
	if k == 0 {
		return sc.FirstChunk
	}
	w := sc.FirstChunk
	for i := 0; i < k && w < sc.Chunk; i++ {
		w *= 2
	}
	return min(w, sc.Chunk)
}

// Streamer turns frames of codes into PCM as they arrive, emitting only
// samples that one-shot decoding of the whole stream would produce, each
// exactly once; the emitted total after Flush is frames·hop.
//
// Every layer of the decoder keeps the input columns its next outputs
// still need (stream_state.go), so each emission decodes only the frames
// that arrived since the last one; the samples that still lack right
// context come out with a later emission. A decoder whose geometry that
// cannot follow decodes windows instead: left context + held-back frames
// + new frames again for each emission.
//
// On the CPU backend the emitted samples are bit-identical to Model.Decode
// (every committed sample is computed by the same arithmetic in both); on
// other backends they agree to the backend's rounding.
//
// A Streamer is used from one goroutine (it drives its Model's backend).
// PushMany pushes to many streamers of one Model in one pass, each
// getting what its own Push would return.
type Streamer struct {
	m     *Model
	sc    StreamConfig
	codes [Codebooks][]int32 // window: frames base … base+len−1; stateful: frames not decoded yet
	base  int                // stream index of codes[·][0] (window)
	n     int                // frames pushed
	done  int                // samples emitted
	emits int                // emissions so far (chunk ramp)
	ended bool
	st    *decoderState // stateful decoding (nil: window decoding)
	// window: decode windows even where the decoder streams layer by
	// layer (newStreamer; for tests that compare the two).
	window bool
	// pushed: st has taken a push (the first one may replay a recorded
	// graph, pushgraph.go).
	pushed bool
}

// NewStreamer returns a streamer over m with the given chunk sizes.
func (m *Model) NewStreamer(sc StreamConfig) (*Streamer, error) {
	return m.newStreamer(sc, false)
}

// newStreamer is NewStreamer, decoding windows if window is set.
func (m *Model) newStreamer(sc StreamConfig, window bool) (*Streamer, error) {
	if m.cfg.NCodebooks != Codebooks {
		return nil, fmt.Errorf("dac streamer: the DAC has %d codebooks, Zonos frames have %d; load descript/dac_44khz", m.cfg.NCodebooks, Codebooks)
	}
	if sc.FirstChunk < 1 || sc.Chunk < 1 {
		return nil, fmt.Errorf("dac streamer: chunk sizes %d/%d frames; both must be ≥ 1", sc.FirstChunk, sc.Chunk)
	}
	s := &Streamer{m: m, sc: sc, window: window}
	s.newState()
	return s, nil
}

// newState starts stateful decoding unless windows are asked for or the
// decoder cannot be streamed layer by layer.
func (s *Streamer) newState() {
	if s.window {
		return
	}
	if st, err := s.m.decoder.newState(); err == nil {
		s.st = st
	}
}

// Push adds frames (each the 9 codes of one time step, codebook order) and
// returns the PCM that became final, possibly none. A frame with a code
// outside 0..1023 is rejected with nothing added (Zonos maps its EOS/MASK
// tokens to 0 before vocoding; do the same before pushing).
func (s *Streamer) Push(frames ...[Codebooks]int32) ([]float32, error) {
	if err := s.check(frames); err != nil {
		return nil, err
	}
	end, due := s.take(frames)
	if !due {
		return nil, nil
	}
	if s.st != nil {
		return s.emitState(false), nil
	}
	return s.emit(end), nil
}

// check is Push's validation: the stream is open and every code in range.
func (s *Streamer) check(frames [][Codebooks]int32) error {
	if s.ended {
		return fmt.Errorf("dac streamer: push after Flush; call Reset to start a new stream")
	}
	for i, f := range frames {
		for k, c := range f {
			if c < 0 || int(c) >= s.m.cfg.CodebookSize {
				return fmt.Errorf("dac streamer: frame %d codebook %d holds %d, outside 0..%d (map Zonos' EOS/MASK tokens to 0 before vocoding); no frame of this push was added",
					s.n+i, k, c, s.m.cfg.CodebookSize-1)
			}
		}
	}
	return nil
}

// take adds checked frames and reports whether an emission is due, and
// up to which sample of the stream it commits (end, window decoding);
// a due emission counts towards the chunk ramp.
func (s *Streamer) take(frames [][Codebooks]int32) (end int, due bool) {
	for _, f := range frames {
		for k, c := range f {
			s.codes[k] = append(s.codes[k], c)
		}
	}
	s.n += len(frames)
	hop := s.m.cfg.HopLength
	want := s.sc.want(s.emits) * hop
	if s.emits == 0 {
		want -= hop - 1 // the first emission's last frame may be partial
	}
	end = s.n*hop - s.m.field.RightSamples
	if end-s.done < want {
		return end, false
	}
	s.emits++
	return end, true
}

// Flush ends the stream: it decodes the held-back tail against the true end
// (the zero padding one-shot decoding sees) and returns the remaining PCM.
func (s *Streamer) Flush() ([]float32, error) {
	if err := s.checkFlush(0); err != nil {
		return nil, err
	}
	s.ended = true
	if s.st != nil {
		return s.emitState(true), nil
	}
	return s.emit(s.n * s.m.cfg.HopLength), nil
}

// checkFlush is Flush's validation, with more frames about to be added
// first.
func (s *Streamer) checkFlush(more int) error {
	if s.ended {
		return fmt.Errorf("dac streamer: Flush called twice; call Reset to start a new stream")
	}
	if s.n+more == 0 {
		return fmt.Errorf("dac streamer: Flush with no frames pushed; push at least one frame")
	}
	return nil
}

// Reset forgets the stream so the Streamer can take a new one.
func (s *Streamer) Reset() {
	for k := range s.codes {
		s.codes[k] = s.codes[k][:0]
	}
	s.base, s.n, s.done, s.emits, s.ended, s.pushed = 0, 0, 0, 0, false, false
	if s.st != nil {
		s.m.withPushLock(func() { s.st.free(s.m.be) })
		s.st = nil
		s.newState()
	}
}

// Frames is the number of frames pushed; Emitted the number of samples
// returned so far; Pending the samples still held back.
func (s *Streamer) Frames() int  { return s.n }
func (s *Streamer) Emitted() int { return s.done }
func (s *Streamer) Pending() int { return s.n*s.m.cfg.HopLength - s.done }

// emit decodes frames [a, n) and returns samples [done, end) of the stream.
// a is the earliest frame whose window still gets sample done right: with a
// = 0 the window starts where the stream does, so nothing is warm-up.
func (s *Streamer) emit(end int) []float32 {
	hop, f := s.m.cfg.HopLength, s.m.field
	if end <= s.done {
		return nil
	}
	a := floorDiv(s.done-f.LeftSamples, hop)
	if a < 0 {
		a = 0
	}
	win := make([][]int32, Codebooks)
	for k := range win {
		win[k] = s.codes[k][a-s.base:]
	}
	audio := s.m.decodeValid(win)
	out := append([]float32(nil), audio[s.done-a*hop:end-a*hop]...)
	s.done = end
	// Frames before the next window's start are never read again.
	if next := floorDiv(s.done-f.LeftSamples, hop); next > s.base {
		drop := next - s.base
		for k := range s.codes {
			s.codes[k] = append(s.codes[k][:0], s.codes[k][drop:]...)
		}
		s.base = next
	}
	return out
}

// emitState decodes the frames pushed since the last emission through the
// stateful decoder (and, when final, its right padding) and returns the
// samples that became final. The ops go to the backend in one hand-off
// (compute.Runner) and the read waits outside it.
func (s *Streamer) emitState(final bool) []float32 {
	be := s.m.be
	var y compute.Tensor
	s.m.withPushLock(func() {
		var x compute.Tensor // the new frames' latent
		if len(s.codes[0]) > 0 {
			if !s.pushed && !final {
				if st, out, ok := s.m.firstPush(s.codes[:], s.sc); ok {
					s.st, y = st, out
				}
			}
			if y == nil {
				x = s.m.fromCodes(s.codes[:])
			}
			s.pushed = true
		}
		switch {
		case final: // the last frames and every stage's right padding in one pass
			y = s.st.finish(be, x)
			s.st.free(be) // the carried columns are not needed any more
		case x != nil:
			y = s.st.push(be, x)
		}
		s.st.releaseGraph()
	})
	for k := range s.codes {
		s.codes[k] = s.codes[k][:0]
	}
	if y == nil {
		return nil
	}
	pcm := be.ReadF32(y)
	be.Free(y)
	s.done += len(pcm)
	return pcm
}
