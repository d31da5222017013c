package sample

import (
	"math"
	"sort"
)

var negInf = float32(math.Inf(-1))

// RepetitionPenalty divides positive logits and multiplies non-positive ones
// by penalty^n, n = occurrences of the token in the window (scatter_reduce
// prod). Tokens are clamped to V−1 first, as the reference does: with
// Zonos' 1026-wide logits a MASK (1025) penalises the −inf pad column, not
// EOS. Negative tokens (unwritten cells) are ignored. history[c] is the
// window of codebook c.
func RepetitionPenalty(logits []float32, V int, history [][]int32, penalty float32) {
	for c, win := range history {
		row := logits[c*V : (c+1)*V]
		factor := map[int32]float32{}
		for _, tok := range win {
			if tok < 0 {
				continue
			}
			if int(tok) > V-1 {
				tok = int32(V - 1)
			}
			if f, ok := factor[tok]; ok {
				factor[tok] = f * penalty
			} else {
				factor[tok] = penalty
			}
		}
		for tok, f := range factor {
			if row[tok] <= 0 {
				row[tok] *= f
			} else {
				row[tok] /= f
			}
		}
	}
}

// Softmax writes softmax(x/temperature) of each row into probs.
func Softmax(probs, logits []float32, V int, temperature float32) {
	for r := 0; r < len(logits)/V; r++ {
		x, p := logits[r*V:(r+1)*V], probs[r*V:(r+1)*V]
		mx := negInf
		for _, v := range x {
			mx = max(mx, v/temperature)
		}
		var sum float64
		for i, v := range x {
			e := float32(math.Exp(float64(v/temperature - mx)))
			p[i] = e
			sum += float64(e)
		}
		for i := range p {
			p[i] = float32(float64(p[i]) / sum)
		}
	}
}

// Unified is NovelAI's unified sampler (apply_unified):
// softmax(log p·(linear + H·conf) − (log p)²·quad), H the entropy.
func Unified(probs []float32, V int, linear, conf, quad float32) {
	raw := make([]float32, V)
	for r := 0; r < len(probs)/V; r++ {
		p := probs[r*V : (r+1)*V]
		var ent float64
		for i, v := range p {
			lp := float32(math.Log(float64(max(v, 1e-20))))
			raw[i] = lp
			ent -= float64(v * lp)
		}
		scale := linear + float32(ent)*conf
		for i, lp := range raw {
			raw[i] = lp*scale - lp*lp*quad
		}
		Softmax(p, raw, V, 1)
	}
}

func renormalise(p []float32) {
	var sum float64
	for _, v := range p {
		sum += float64(v)
	}
	for i := range p {
		p[i] = float32(float64(p[i]) / sum)
	}
}

// TopP keeps the smallest prefix of the descending-sorted distribution whose
// mass before each kept token is ≤ topP, then renormalises.
func TopP(probs []float32, V int, topP float32) {
	idx := make([]int, V)
	for r := 0; r < len(probs)/V; r++ {
		p := probs[r*V : (r+1)*V]
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
		var cum float32
		drop := make([]bool, V)
		for _, i := range idx {
			cum += p[i]
			if cum-p[i] > topP {
				drop[i] = true
			}
		}
		for i := range p {
			if drop[i] {
				p[i] = 0
			}
		}
		renormalise(p)
	}
}

// TopK zeroes every probability below the k-th largest, then renormalises.
func TopK(probs []float32, V int, k int) {
	k = min(k, V)
	sorted := make([]float32, V)
	for r := 0; r < len(probs)/V; r++ {
		p := probs[r*V : (r+1)*V]
		copy(sorted, p)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a] > sorted[b] })
		pivot := sorted[k-1]
		for i := range p {
			if p[i] < pivot {
				p[i] = 0
			}
		}
		renormalise(p)
	}
}

// MinP zeroes probabilities below minP × the row's maximum, then
// renormalises.
func MinP(probs []float32, V int, minP float32) {
	for r := 0; r < len(probs)/V; r++ {
		p := probs[r*V : (r+1)*V]
		var mx float32
		for _, v := range p {
			mx = max(mx, v)
		}
		cut := minP * mx
		for i := range p {
			if p[i] < cut {
				p[i] = 0
			}
		}
		renormalise(p)
	}
}

// Argmax returns the first index of each row's maximum.
func Argmax(x []float32, V int) []int32 {
	out := make([]int32, len(x)/V)
	for r := range out {
		row := x[r*V : (r+1)*V]
		best := 0
		for i, v := range row {
			if v > row[best] {
				best = i
			}
		}
		out[r] = int32(best)
	}
	return out
}

// Draw picks argmax(p/q) per row: an exact draw from p when q ~ Exp(1)
// (the exponential race the reference's multinomial uses).
func Draw(probs, q []float32, V int) []int32 {
	ratio := make([]float32, len(probs))
	for i := range probs {
		ratio[i] = probs[i] / q[i]
	}
	return Argmax(ratio, V)
}
