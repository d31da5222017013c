package dac

import "zonostream/engine/compute"

// DecodeLatent runs the decoder on a host latent [hidden][T], as Decode
// does after the codebooks.
func (m *Model) DecodeLatent(latent []float32, T int) []float32 {
	l := m.be.FromF32(latent, 1, m.cfg.HiddenSize, T)
	a := m.decoder.forward(m.be, l)
	defer m.be.Free(a)
	m.be.Free(l)
	return m.be.ReadF32(a)
}

// NewStreamerWindow is NewStreamer, decoding windows instead of carrying
// state when window is set (the tests compare the two).
func (m *Model) NewStreamerWindow(sc StreamConfig, window bool) (*Streamer, error) {
	return m.newStreamer(sc, window)
}

// Stateful reports whether s decodes with carried state rather than by
// re-decoding a window.
func (s *Streamer) Stateful() bool { return s.st != nil }

// LatentStreams are decoder states fed latent columns directly, each
// twice: stacked with the others (pushStacked) and alone (decoderState's
// push and finish), for TestStackedStages.
type LatentStreams struct {
	m              *Model
	stacked, alone []*decoderState
}

// NewLatentStreams returns n fresh streams.
func (m *Model) NewLatentStreams(n int) (*LatentStreams, error) {
	l := &LatentStreams{m: m}
	for range 2 * n {
		st, err := m.decoder.newState()
		if err != nil {
			return nil, err
		}
		if len(l.stacked) < n {
			l.stacked = append(l.stacked, st)
		} else {
			l.alone = append(l.alone, st)
		}
	}
	return l, nil
}

// Push gives stream i the latent columns xs[i] ([hidden][·] row-major;
// empty: none), finishing it when final[i]; a stream with neither sits
// out. It returns each stream's samples both ways, and whether a stack
// of the input split (its rows left a stage in different stacks) or
// rows of different stacks left one stage stacked.
func (l *LatentStreams) Push(xs [][]float32, final []bool) (stacked, alone [][]float32, split, merged bool) {
	be, h := l.m.be, l.m.cfg.HiddenSize
	byLen := map[int]int{}
	var parts []part
	var data [][]float32
	in := map[int]int{} // row → input part
	for i, x := range xs {
		if len(x) == 0 && !final[i] {
			continue
		}
		k, ok := byLen[len(x)]
		if !ok {
			k, byLen[len(x)] = len(parts), len(parts)
			parts, data = append(parts, part{}), append(data, nil)
		}
		parts[k].rows, data[k] = append(parts[k].rows, i), append(data[k], x...)
		in[i] = k
	}
	for k := range parts {
		if n := len(data[k]); n > 0 {
			parts[k].x = be.FromF32(data[k], len(parts[k].rows), h, n/h/len(parts[k].rows))
		}
	}
	stacked, alone = make([][]float32, len(xs)), make([][]float32, len(xs))
	outs := pushStacked(be, l.stacked, final, parts)
	seen := map[int]int{} // input part → output part
	for o, y := range outs {
		from := -1
		for _, r := range y.rows {
			if from >= 0 && in[r] != from {
				merged = true
			}
			from = in[r]
			if p, ok := seen[in[r]]; ok && p != o {
				split = true
			}
			seen[in[r]] = o
		}
		if y.x == nil {
			continue
		}
		pcm := be.ReadF32(y.x)
		be.Free(y.x)
		n := len(pcm) / len(y.rows)
		for k, r := range y.rows {
			stacked[r] = pcm[k*n : (k+1)*n]
		}
	}
	for i, x := range xs {
		if _, ok := in[i]; !ok {
			continue
		}
		var t compute.Tensor
		if len(x) > 0 {
			t = be.FromF32(x, 1, h, len(x)/h)
		}
		var y compute.Tensor
		if final[i] {
			y = l.alone[i].finish(be, t)
		} else {
			y = l.alone[i].push(be, t)
		}
		if y != nil {
			alone[i] = be.ReadF32(y)
			be.Free(y)
		}
	}
	return stacked, alone, split, merged
}
