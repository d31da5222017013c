package dac

import (
	"errors"
	"fmt"

	"zonostream/engine/compute"
)

// Push is one stream's share of a PushMany call: frames for S, as
// S.Push(Frames...) takes them.
type Push struct {
	S      *Streamer
	Frames [][Codebooks]int32
	// Flush ends the stream after Frames: the result is then what Push
	// and Flush would return one after the other.
	Flush bool
}

// PushMany is Push for the streams of one Model in one pass through the
// decoder, for a server vocoding many streams at a time. Result i is,
// sample for sample, what pushes[i].S.Push(pushes[i].Frames...) would
// return (followed by what Flush would, with Flush set), and each
// streamer is left as that call would leave it.
//
// Streams whose emissions have the same shape at a stage of the decoder —
// the same new columns and carried columns, as steady emissions of one
// chunk size have at every stage — run there as one batch: the stage's
// weights are read once for all of them and its convolution is one larger
// product (stream_batch.go). The others run alone at that stage, as they
// would in Push. A stream's first emission that replays a recording
// (pushgraph.go) replays it alone, and a streamer that decodes windows
// pushes alone.
//
// Every push is checked before any takes effect: after an error (a code
// out of range, a streamer of another model or twice in one call, a push
// after Flush) no stream has changed.
func PushMany(pushes []Push) ([][]float32, error) {
	if len(pushes) == 0 {
		return nil, nil
	}
	if err := checkPushes(pushes); err != nil {
		return nil, err
	}
	out := make([][]float32, len(pushes))
	var rows []int // pushes whose emission goes through the stacked decoder
	for i, p := range pushes {
		s := p.S
		if s.st == nil {
			pcm, err := s.pushAlone(p)
			if err != nil {
				return nil, fmt.Errorf("dac PushMany: push %d: %w", i, err)
			}
			out[i] = pcm
			continue
		}
		if _, due := s.take(p.Frames); due || p.Flush {
			s.ended = p.Flush
			rows = append(rows, i)
		}
	}
	pushes[0].S.m.emitStacked(pushes, rows, out)
	return out, nil
}

// checkPushes is PushMany's validation.
func checkPushes(pushes []Push) error {
	var m *Model
	seen := map[*Streamer]bool{}
	for i, p := range pushes {
		var err error
		switch {
		case p.S == nil:
			err = errors.New("no streamer")
		case m != nil && p.S.m != m:
			err = errors.New("a streamer of another DAC model; one call takes one model's streams")
		case seen[p.S]:
			err = errors.New("the streamer is in the call twice; give it one push with all its frames")
		default:
			m, seen[p.S] = p.S.m, true
			if err = p.S.check(p.Frames); err == nil && p.Flush {
				err = p.S.checkFlush(len(p.Frames))
			}
		}
		if err != nil {
			return fmt.Errorf("dac PushMany: push %d: %w", i, err)
		}
	}
	return nil
}

// pushAlone is p through Push (and Flush) of its own streamer.
func (s *Streamer) pushAlone(p Push) ([]float32, error) {
	pcm, err := s.Push(p.Frames...)
	if err != nil || !p.Flush {
		return pcm, err
	}
	tail, err := s.Flush()
	return append(pcm, tail...), err
}

// emitStacked is emitState for the stateful streams of pushes[rows], whose
// emissions are due (finishing those with Flush), decoded together: their
// codebook lookups stacked by length, then pushStacked. It writes each
// stream's samples to out.
func (m *Model) emitStacked(pushes []Push, rows []int, out [][]float32) {
	if len(rows) == 0 {
		return
	}
	be := m.be
	sts := make([]*decoderState, len(rows))
	final := make([]bool, len(rows))
	var ys []part // rows of pushes[rows]: each stack's samples
	m.withPushLock(func() {
		var replayed, parts []part
		byLen := map[int]int{} // frames → index in parts
		var ends part          // finishing rows without new frames
		for j, i := range rows {
			s := pushes[i].S
			final[j] = pushes[i].Flush
			T := len(s.codes[0])
			replay := false
			if T > 0 && !s.pushed && !final[j] {
				if st, y, ok := m.firstPush(s.codes[:], s.sc); ok {
					s.st, replay = st, true
					replayed = append(replayed, part{x: y, rows: []int{j}})
				}
			}
			sts[j] = s.st
			switch {
			case replay:
			case T > 0:
				k, ok := byLen[T]
				if !ok {
					k, byLen[T] = len(parts), len(parts)
					parts = append(parts, part{})
				}
				parts[k].rows = append(parts[k].rows, j)
			case final[j]:
				ends.rows = append(ends.rows, j)
			}
			s.pushed = s.pushed || T > 0
		}
		for k, p := range parts {
			parts[k].x = m.fromCodesOf(pushes, rows, p.rows)
		}
		if len(ends.rows) > 0 {
			parts = append(parts, ends)
		}
		ys = append(pushStacked(be, sts, final, parts), replayed...)
		for j, st := range sts {
			if final[j] {
				st.free(be) // the carried columns are not needed any more
			}
			st.releaseGraph()
			s := pushes[rows[j]].S
			for k := range s.codes {
				s.codes[k] = s.codes[k][:0]
			}
		}
	})
	for _, y := range ys {
		pcm := be.ReadF32(y.x)
		be.Free(y.x)
		n := len(pcm) / len(y.rows)
		for k, j := range y.rows {
			i := rows[j]
			out[i] = pcm[k*n : (k+1)*n : (k+1)*n]
			pushes[i].S.done += n
		}
	}
}

// fromCodesOf is fromCodes for the pending frames of several streams
// (pushes[rows[j]] for j in js, all of one length), stacked along the
// batch axis: the latent [len(js), hidden, T].
func (m *Model) fromCodesOf(pushes []Push, rows, js []int) compute.Tensor {
	var e []float32
	var T int
	for _, j := range js {
		s := pushes[rows[j]].S
		T = len(s.codes[0])
		e = append(e, m.entries(s.codes[:])...)
	}
	in := m.be.FromF32(e, len(js), len(m.codebooks)*m.cfg.CodebookDim, T)
	x := m.outAll.forward(m.be, in)
	m.be.Free(in)
	return x
}
