package speaker

import (
	"fmt"
	"math"
	"math/cmplx"
	"sync"
)

// The log-mel front end of Zyphra's logFbankCal (speaker_cloning.py):
// torchaudio.transforms.MelSpectrogram with these settings, then
// log(x + 1e-6) minus the per-mel mean over time.
const (
	SampleRate = 16000
	NFFT       = 512
	WinLength  = 400 // 25 ms
	HopLength  = 160 // 10 ms
	NMels      = 80
	LogEps     = 1e-6
	nFreqs     = NFFT/2 + 1
)

var (
	frontOnce sync.Once
	window    []float64   // periodic Hann of WinLength, centred in NFFT
	melFB     [][]float64 // [nFreqs][NMels]
	twiddle   []complex128
	bitrev    []int
)

func initFront() {
	frontOnce.Do(func() {
		window = make([]float64, NFFT)
		off := (NFFT - WinLength) / 2 // torch.stft pads the window to n_fft, centred
		for n := 0; n < WinLength; n++ {
			window[off+n] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(n)/WinLength)
		}
		melFB = MelFilterbank(nFreqs, NMels, SampleRate)
		twiddle = make([]complex128, NFFT/2)
		for k := range twiddle {
			twiddle[k] = cmplx.Exp(complex(0, -2*math.Pi*float64(k)/NFFT))
		}
		bits := 0
		for 1<<bits < NFFT {
			bits++
		}
		bitrev = make([]int, NFFT)
		for i := range bitrev {
			r := 0
			for b := 0; b < bits; b++ {
				r |= (i >> b & 1) << (bits - 1 - b)
			}
			bitrev[i] = r
		}
	})
}

// HannWindow is torch.hann_window(WinLength, periodic=True).
func HannWindow() []float64 {
	initFront()
	return append([]float64(nil), window[(NFFT-WinLength)/2:(NFFT+WinLength)/2]...)
}

// MelFilterbank is torchaudio.functional.melscale_fbanks(nFreqs, 0, sr/2,
// nMels, sr, norm=None, mel_scale="htk"): triangular filters with corners
// equally spaced on the HTK mel scale 2595·log10(1 + f/700). [nFreqs][nMels].
func MelFilterbank(nFreqs, nMels, sr int) [][]float64 {
	hzToMel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	melToHz := func(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }
	fMax := float64(sr / 2)
	mMax := hzToMel(fMax)
	fPts := make([]float64, nMels+2)
	for i := range fPts {
		fPts[i] = melToHz(mMax * float64(i) / float64(nMels+1))
	}
	fb := make([][]float64, nFreqs)
	for k := range fb {
		f := fMax * float64(k) / float64(nFreqs-1)
		fb[k] = make([]float64, nMels)
		for m := 0; m < nMels; m++ {
			down := (f - fPts[m]) / (fPts[m+1] - fPts[m])
			up := (fPts[m+2] - f) / (fPts[m+2] - fPts[m+1])
			fb[k][m] = max(0, min(down, up))
		}
	}
	return fb
}

// fft512 transforms buf in place (iterative radix-2).
func fft512(buf []complex128) {
	for i, r := range bitrev {
		if i < r {
			buf[i], buf[r] = buf[r], buf[i]
		}
	}
	for size := 2; size <= NFFT; size <<= 1 {
		half, step := size/2, NFFT/size
		for start := 0; start < NFFT; start += size {
			for k := 0; k < half; k++ {
				t := twiddle[k*step] * buf[start+k+half]
				buf[start+k+half] = buf[start+k] - t
				buf[start+k] += t
			}
		}
	}
}

// Frames is the number of feature frames for n samples (centred STFT).
func Frames(n int) int { return 1 + n/HopLength }

// LogMel computes the model's input features from 16 kHz mono samples:
// [NMels][Frames(len)] row-major. The signal is reflect-padded by NFFT/2 on
// both sides (torch.stft center=True), which needs more than NFFT/2 samples.
// Arithmetic is float64; the result is rounded to float32.
func LogMel(samples []float32) ([]float32, int, error) {
	n := len(samples)
	if n <= NFFT/2 {
		return nil, 0, fmt.Errorf("speaker features: %d samples is too short (need more than %d at 16 kHz)", n, NFFT/2)
	}
	initFront()
	F := Frames(n)
	pad := NFFT / 2
	at := func(i int) float64 { // reflect padding without repeating the edge
		j := i - pad
		if j < 0 {
			j = -j
		}
		if j >= n {
			j = 2*(n-1) - j
		}
		return float64(samples[j])
	}
	mel := make([]float64, NMels*F)
	buf := make([]complex128, NFFT)
	power := make([]float64, nFreqs)
	for f := 0; f < F; f++ {
		base := f * HopLength
		for i := range buf {
			buf[i] = complex(at(base+i)*window[i], 0)
		}
		fft512(buf)
		for k := range power {
			re, im := real(buf[k]), imag(buf[k])
			power[k] = re*re + im*im
		}
		for m := 0; m < NMels; m++ {
			var s float64
			for k, p := range power {
				if w := melFB[k][m]; w != 0 {
					s += p * w
				}
			}
			mel[m*F+f] = math.Log(s + LogEps)
		}
	}
	out := make([]float32, NMels*F)
	for m := 0; m < NMels; m++ {
		row := mel[m*F : (m+1)*F]
		var mean float64
		for _, v := range row {
			mean += v
		}
		mean /= float64(F)
		for f, v := range row {
			out[m*F+f] = float32(v - mean)
		}
	}
	return out, F, nil
}
