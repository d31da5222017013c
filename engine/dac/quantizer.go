package dac

import (
	"fmt"

	"zonostream/engine/compute"
)

// codebook is one DacVectorQuantize: in_proj (1×1 conv hidden → dim, used
// by the encoder only), the code table [size, dim], and out_proj (1×1 conv
// dim → hidden). The table stays on the host: lookups are a gather of 8
// floats per frame and the encoder's nearest-code search needs it anyway.
type codebook struct {
	inProj, outProj conv
	table           []float32 // [size, dim] as stored
	normed          []float32 // rows l2-normalised (F.normalize)
	normSq          []float32 // ‖normed row‖² (≈ 1, kept exact for the distance)
}

// bindCodebooks binds the codebooks and outAll, every out_proj as one 1×1
// convolution over the codebooks' entries stacked along the channels: its
// weight [hidden, n·dim, 1] holds out_proj k's in input channels
// [k·dim, (k+1)·dim), its bias the biases' sum in codebook order.
func (b *binder) bindCodebooks(c Config) (cbs []codebook, outAll conv) {
	cbs = make([]codebook, c.NCodebooks)
	h, dim, nd := c.HiddenSize, c.CodebookDim, c.NCodebooks*c.CodebookDim
	wAll, bAll := make([]float32, h*nd), make([]float32, h)
	for i := range cbs {
		p := fmt.Sprintf("quantizer.quantizers.%d", i)
		cb := &cbs[i]
		cb.inProj = b.bindConv(p+".in_proj", c.HiddenSize, c.CodebookDim, 1, compute.Conv1dSpec{})
		w := b.convWeight(p+".out_proj", []int{h, dim, 1})
		bias := b.read(p+".out_proj.bias", []int{h})
		cb.outProj = conv{w: b.upload(w, h, dim, 1), b: b.upload(bias, h), k: 1, spec: compute.Conv1dSpec{}.Normalized()}
		if w == nil || bias == nil { // a problem is recorded; nothing is uploaded
			wAll, bAll = nil, nil
		}
		if wAll != nil {
			for o := 0; o < h; o++ {
				copy(wAll[o*nd+i*dim:o*nd+(i+1)*dim], w[o*dim:(o+1)*dim])
				bAll[o] += bias[o]
			}
		}
		cb.table = b.read(p+".codebook.weight", []int{c.CodebookSize, c.CodebookDim})
		if cb.table != nil {
			cb.normed, cb.normSq = normalizeRows(cb.table, c.CodebookDim)
		}
	}
	outAll = conv{w: b.upload(wAll, h, nd, 1), b: b.upload(bAll, h), k: 1, spec: compute.Conv1dSpec{}.Normalized()}
	return cbs, outAll
}

// normalizeRows is F.normalize(x, dim=1): each row divided by max(‖row‖₂,
// 1e-12), computed in float32 like the reference; it also returns each
// normalised row's squared norm.
func normalizeRows(x []float32, dim int) (normed, normSq []float32) {
	n := len(x) / dim
	normed = make([]float32, len(x))
	normSq = make([]float32, n)
	for r := 0; r < n; r++ {
		row := x[r*dim : (r+1)*dim]
		var ss float32
		for _, v := range row {
			ss += v * v
		}
		nrm := float32(sqrt64(float64(ss)))
		if nrm < 1e-12 {
			nrm = 1e-12
		}
		var s2 float32
		for j, v := range row {
			q := v / nrm
			normed[r*dim+j] = q
			s2 += q * q
		}
		normSq[r] = s2
	}
	return normed, normSq
}

// gather builds the [1, dim, T] input of out_proj for one codebook's codes
// (codebook(codes).transpose(1, 2)); codes must already be validated.
func (cb *codebook) gather(codes []int32, dim int) []float32 {
	T := len(codes)
	out := make([]float32, dim*T)
	for t, c := range codes {
		row := cb.table[int(c)*dim : (int(c)+1)*dim]
		for j, v := range row {
			out[j*T+t] = v
		}
	}
	return out
}

// fromCodes is DacResidualVectorQuantizer.from_codes: Σ_k out_proj_k(
// codebook_k[codes_k]) → latent [1, hidden, T], as one convolution over
// the codebooks' entries stacked along the channels (outAll): one upload
// and one kernel instead of one of each per codebook and the adds between
// them (a streamed emission's latent was 27 operations on the GPU). The
// products are the reference's; only the order of the sum differs.
// codes [n_codebooks][T] must be validated.
func (m *Model) fromCodes(codes [][]int32) compute.Tensor {
	be, T := m.be, len(codes[0])
	in := be.FromF32(m.entries(codes), 1, len(m.codebooks)*m.cfg.CodebookDim, T)
	out := m.outAll.forward(be, in)
	be.Free(in)
	return out
}

// entries gathers the codebooks' entries of codes, stacked along the
// channels as outAll takes them: [n_codebooks·dim, T] row-major.
func (m *Model) entries(codes [][]int32) []float32 {
	dim, T := m.cfg.CodebookDim, len(codes[0])
	e := make([]float32, 0, len(m.codebooks)*dim*T)
	for k := range m.codebooks {
		e = append(e, m.codebooks[k].gather(codes[k], dim)...)
	}
	return e
}

// quantize is DacResidualVectorQuantizer.forward in eval mode: for each
// codebook, project the residual (in_proj), pick the code whose
// l2-normalised entry is nearest to the l2-normalised projection, look the
// raw entry up, project it back (out_proj), add it to the quantized sum and
// subtract it from the residual. Returns the codes [n_codebooks][T] and the
// quantized representation [1, hidden, T]. z is not freed.
func (m *Model) quantize(z compute.Tensor) ([][]int32, compute.Tensor) {
	be, dim := m.be, m.cfg.CodebookDim
	T := z.Shape()[2]
	codes := make([][]int32, len(m.codebooks))
	residual := z
	var sum compute.Tensor
	for k := range m.codebooks {
		cb := &m.codebooks[k]
		pt := cb.inProj.forward(be, residual)
		proj := be.ReadF32(pt) // [dim, T]
		be.Free(pt)
		codes[k] = cb.nearest(proj, dim, T)
		// Straight-through estimator as evaluated by the reference:
		// proj + (q − proj), which can differ from q in the last bit.
		ste := cb.gather(codes[k], dim)
		for i, p := range proj {
			ste[i] = p + (ste[i] - p)
		}
		st := be.FromF32(ste, 1, dim, T)
		q := cb.outProj.forward(be, st)
		be.Free(st)
		neg := be.Scale(q, -1)
		r := be.Add(residual, neg)
		be.Free(neg)
		if residual != z {
			be.Free(residual)
		}
		residual = r
		if sum == nil {
			sum = q
		} else {
			s := be.Add(sum, q)
			be.Free(sum)
			be.Free(q)
			sum = s
		}
	}
	if residual != z {
		be.Free(residual)
	}
	return codes, sum
}

// nearest returns, per frame, argmax over entries of
// −(‖e‖² − 2·e·c) + ‖c‖² with e and c l2-normalised (DacVectorQuantize.
// decode_latents, evaluated in the same order and precision); ties go to the
// lowest index.
func (cb *codebook) nearest(proj []float32, dim, T int) []int32 {
	codes := make([]int32, T)
	e := make([]float32, dim)
	size := len(cb.normSq)
	for t := 0; t < T; t++ {
		var ss float32
		for j := 0; j < dim; j++ {
			e[j] = proj[j*T+t]
			ss += e[j] * e[j]
		}
		nrm := float32(sqrt64(float64(ss)))
		if nrm < 1e-12 {
			nrm = 1e-12
		}
		var l2 float32
		for j := range e {
			e[j] /= nrm
			l2 += e[j] * e[j]
		}
		best, bestD := 0, float32(0)
		for c := 0; c < size; c++ {
			row := cb.normed[c*dim : (c+1)*dim]
			var dot float32
			for j, v := range row {
				dot += e[j] * v
			}
			d := -(l2 - 2*dot) + cb.normSq[c]
			if c == 0 || d > bestD {
				best, bestD = c, d
			}
		}
		codes[t] = int32(best)
	}
	return codes
}
