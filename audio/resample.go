package audio

import (
	"fmt"
	"math"
)

// Resampling parameters of torchaudio.functional.resample's defaults, which
// Zonos uses for speaker clips (→ 16 kHz) and prefix audio (→ 44.1 kHz).
const (
	// ResampleLowpassWidth is the number of sinc zero crossings kept on
	// each side (torchaudio's lowpass_filter_width default).
	ResampleLowpassWidth = 6
	// ResampleRolloff is the cutoff as a fraction of the lower Nyquist
	// frequency (torchaudio's rolloff default).
	ResampleRolloff = 0.99
	// MaxResampleRate bounds the rates NewResampler accepts; 768 kHz is the
	// highest rate audio interfaces offer.
	MaxResampleRate = 768000
)

// Resampler converts mono float32 audio from one sample rate to another
// exactly as torchaudio.functional.resample does with its defaults
// (sinc_interp_hann, lowpass_filter_width 6, rolloff 0.99): both rates are
// divided by their gcd, a Hann-windowed sinc filter bank with one phase per
// output sample of a period is built in float32 with torchaudio's order of
// operations, the input is zero-padded and convolved with stride equal to the
// reduced input rate, and the output is cut to ceil(to·n/from) samples.
// Outputs match the golden pack to ≤ 1e-5 (resample_test.go reports the
// figure). A Resampler is immutable and safe for concurrent use.
type Resampler struct {
	from, to   int // the rates as given
	orig, new  int // the rates divided by their gcd
	width      int // filter half-width in input samples at the reduced rate
	kernelLen  int // 2·width + orig: torchaudio's kernel row length
	clampValue float32
	// Each phase j (0 ≤ j < new) keeps only the taps where torchaudio's
	// time argument is inside ±lowpass width; taps outside all equal
	// clampValue (|clampValue| < 1e-20), which the convolution ignores.
	phaseStart []int // first kept tap of phase j, in 0..kernelLen
	phaseTaps  [][]float32
}

// NewResampler prepares a resampler between two positive integer rates.
func NewResampler(from, to int) (*Resampler, error) {
	if from <= 0 || to <= 0 || from > MaxResampleRate || to > MaxResampleRate {
		return nil, fmt.Errorf("resample %d Hz → %d Hz: rates must be between 1 and %d Hz", from, to, MaxResampleRate)
	}
	g := gcd(from, to)
	r := &Resampler{from: from, to: to, orig: from / g, new: to / g}
	if from == to {
		return r, nil
	}
	base := float64(min(r.orig, r.new)) * ResampleRolloff
	r.width = int(math.Ceil(ResampleLowpassWidth * float64(r.orig) / base))
	r.kernelLen = 2*r.width + r.orig
	r.clampValue = kernelValue(float32(ResampleLowpassWidth), base, r.orig) // t clamped at ±6
	r.phaseStart = make([]int, r.new)
	r.phaseTaps = make([][]float32, r.new)
	// Tap i of phase j sits at time (i−width)/orig − j/new input periods; it
	// is inside the window when that, times base, is within ±6. Compute the
	// range in float64 with a margin of two taps, then evaluate each tap with
	// torchaudio's float32 arithmetic (taps of the margin that fall outside
	// get exactly the clamped value, like torchaudio's).
	half := ResampleLowpassWidth / base
	for j := range r.new {
		c := float64(j) / float64(r.new)
		lo := max(0, int(math.Floor((c-half)*float64(r.orig)))+r.width-2)
		hi := min(r.kernelLen, int(math.Ceil((c+half)*float64(r.orig)))+r.width+3)
		taps := make([]float32, max(0, hi-lo))
		for i := range taps {
			taps[i] = kernelTap(r.orig, r.new, base, ResampleLowpassWidth, j, lo+i-r.width)
		}
		r.phaseStart[j] = lo
		r.phaseTaps[j] = taps
	}
	return r, nil
}

// kernelTap is torchaudio's kernel value for output phase j and input offset
// k (tap index minus width), in its float32 order of operations:
// idx = k/orig; t = (−j)/new + idx; t *= base; clamp to ±lpw; window
// cos(t·π/lpw/2)²; t *= π; sinc = sin(t)/t (1 at 0); value = sinc ·
// (window · base/orig).
func kernelTap(orig, nw int, base float64, lpw, j, k int) float32 {
	idx := float32(k) / float32(orig)
	t := float32(-j)/float32(nw) + idx
	t *= float32(base)
	t = min(max(t, -float32(lpw)), float32(lpw))
	return kernelValue(t, base, orig)
}

// kernelValue finishes kernelTap from the clamped time argument t.
func kernelValue(t float32, base float64, orig int) float32 {
	const lpw = ResampleLowpassWidth
	c := cos32(t * float32(math.Pi) / float32(lpw) / 2)
	window := c * c
	t *= float32(math.Pi)
	sinc := float32(1)
	if t != 0 {
		sinc = sin32(t) / t
	}
	return sinc * (window * float32(base/float64(orig)))
}

// sin32 and cos32 are float32 sine and cosine rounded from float64; they
// differ from PyTorch's vectorised float32 versions by at most about one
// unit in the last place.
func sin32(x float32) float32 { return float32(math.Sin(float64(x))) }
func cos32(x float32) float32 { return float32(math.Cos(float64(x))) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// From is the input rate.
func (r *Resampler) From() int { return r.from }

// To is the output rate.
func (r *Resampler) To() int { return r.to }

// Width is torchaudio's filter half-width in input samples (at the gcd-reduced
// rate): the `width` that _get_sinc_resample_kernel returns.
func (r *Resampler) Width() int { return r.width }

// maxKernelValues bounds Kernel's allocation (64 M values, 256 MB): for
// large coprime rates torchaudio's dense bank is enormous (44100 → 44099:
// 44099 × 44112 values) although only ~13 taps per phase matter.
const maxKernelValues = 1 << 26

// Kernel returns torchaudio's full filter bank, row-major [phases][taps] with
// phases = to/gcd and taps = 2·Width + from/gcd, including the negligible
// clamped taps the convolution skips. It exists to check the construction
// against torchaudio's _get_sinc_resample_kernel. Equal rates have no kernel
// (phases = taps = 0); a bank over 64 M values is refused.
func (r *Resampler) Kernel() (k []float32, phases, taps int, err error) {
	if r.from == r.to {
		return nil, 0, 0, nil
	}
	if r.new*r.kernelLen > maxKernelValues {
		return nil, r.new, r.kernelLen, fmt.Errorf("resample %d Hz → %d Hz: the dense kernel has %d×%d values, over the %d limit; it is only needed for checks", r.from, r.to, r.new, r.kernelLen, maxKernelValues)
	}
	k = make([]float32, r.new*r.kernelLen)
	for j := range r.new {
		row := k[j*r.kernelLen : (j+1)*r.kernelLen]
		for i := range row {
			row[i] = r.clampValue
		}
		copy(row[r.phaseStart[j]:], r.phaseTaps[j])
	}
	return k, r.new, r.kernelLen, nil
}

// OutLen is the number of output samples for n input samples: torchaudio's
// ceil(new·n/orig), where the quotient is rounded to float32 before the
// ceiling as torch.as_tensor does, bounded by what the convolution yields.
func (r *Resampler) OutLen(n int) int {
	if n <= 0 {
		return 0
	}
	if r.from == r.to {
		return n
	}
	q := float32(float64(r.new) * float64(n) / float64(r.orig))
	out := int(math.Ceil(float64(q)))
	return min(out, (n/r.orig+1)*r.new)
}

// Resample converts src and returns a new slice of OutLen(len(src)) samples.
// Equal rates return a copy of src, as torchaudio returns its input.
func (r *Resampler) Resample(src []float32) []float32 {
	return r.ResampleInto(make([]float32, r.OutLen(len(src))), src)
}

// ResampleInto writes the output into dst, which must hold OutLen(len(src))
// samples, and returns dst[:OutLen(len(src))]. It allocates nothing.
func (r *Resampler) ResampleInto(dst, src []float32) []float32 {
	n := r.OutLen(len(src))
	if len(dst) < n {
		panic(fmt.Sprintf("audio.Resampler.ResampleInto: dst holds %d samples, need %d", len(dst), n))
	}
	dst = dst[:n]
	if r.from == r.to {
		copy(dst, src)
		return dst
	}
	for m := range dst {
		dst[m] = r.convolve(m, src, 0)
	}
	return dst
}

// convolve computes output sample m from in, which holds the input samples
// from index off up to the end of the input received so far. Output m =
// b·new + j uses input samples b·orig + i − width for the kept taps i of
// phase j; samples before 0 and past the end of in are torchaudio's zero
// padding. in must start at or before the first sample m uses. The sum
// runs in float64 in tap order whatever in holds, so ResampleStream's
// output equals Resample's for any cutting of the input.
func (r *Resampler) convolve(m int, in []float32, off int) float32 {
	b, j := m/r.new, m%r.new
	first := b*r.orig + r.phaseStart[j] - r.width // input index of the first kept tap
	taps := r.phaseTaps[j]
	lo, hi := 0, len(taps)
	if first < 0 {
		lo = -first
	}
	if end := off + len(in); first+hi > end {
		hi = end - first
	}
	if hi <= lo {
		return 0
	}
	x := in[first-off+lo : first-off+hi]
	taps = taps[lo:hi]
	taps = taps[:len(x)]
	var acc float64
	for i, v := range x {
		acc += float64(taps[i]) * float64(v)
	}
	return float32(acc)
}

// windowEnd is one past the last input sample that output m uses.
func (r *Resampler) windowEnd(m int) int {
	b, j := m/r.new, m%r.new
	return b*r.orig + r.phaseStart[j] - r.width + len(r.phaseTaps[j])
}

// Resample converts mono samples from one rate to another with torchaudio's
// default resampler; see Resampler. For repeated conversions between the
// same rates keep a Resampler instead (building the filter bank is the
// expensive part for rates with a small gcd).
func Resample(src []float32, from, to int) ([]float32, error) {
	r, err := NewResampler(from, to)
	if err != nil {
		return nil, err
	}
	return r.Resample(src), nil
}
