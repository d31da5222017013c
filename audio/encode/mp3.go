package encode

/*
#cgo LDFLAGS: -lmp3lame
#include <lame/lame.h>
*/
import "C"

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// DefaultMP3Bitrate is the bitrate when Options.Bitrate is 0, 128 kb/s
// (LAME's own default for CBR), or the highest the output rate allows when
// that is lower (64 kb/s for MPEG 2.5's 8–12 kHz).
const DefaultMP3Bitrate = 128000

// mp3Rates are MPEG audio's sample rates: MPEG 1 (32, 44.1, 48 kHz), MPEG 2
// (half those) and MPEG 2.5 (a quarter).
var mp3Rates = []int{8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000}

// mp3Bitrates are the CBR bitrates in kb/s of each MPEG version (ISO/IEC
// 11172-3 and 13818-3, layer III), by the version's lowest sample rate.
var mp3Bitrates = map[int][]int{
	32000: {32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	16000: {8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	8000:  {8, 16, 24, 32, 40, 48, 56, 64},
}

// mp3Piece bounds the samples given to LAME at once, and so its output
// buffer.
const mp3Piece = 8192

// mp3Encoder writes constant-bitrate mono MP3 through LAME. The Xing/LAME
// info frame is not written: LAME fills it in at the end by seeking back
// to the start. Each Write sends the frames LAME completes; LAME holds back
// a frame and its analysis window (1904 samples, 43 ms at 44.1 kHz). The
// bit reservoir is off: with it, a frame's bytes wait until the next frame
// is encoded, since that one may borrow room in them, a frame more of
// delay (measured with TestStreaming), for some quality at low bitrates.
type mp3Encoder struct {
	state
	w       io.Writer
	gf      C.lame_t
	cleanup runtime.Cleanup
	inRate  int
	rate    int
	buf     []byte
}

func newMP3(w io.Writer, inRate, outRate, bitrate int) (*mp3Encoder, error) {
	if !slices.Contains(mp3Rates, outRate) {
		return nil, fmt.Errorf("mp3 encoder: output rate %d Hz is not an MP3 rate; use one of %s Hz", outRate, joinInts(mp3Rates, 1))
	}
	version := 32000
	switch {
	case outRate < 16000:
		version = 8000
	case outRate < 32000:
		version = 16000
	}
	allowed := mp3Bitrates[version]
	kbps := bitrate / 1000
	if bitrate == 0 {
		kbps = min(DefaultMP3Bitrate/1000, allowed[len(allowed)-1])
	} else if bitrate%1000 != 0 || !slices.Contains(allowed, kbps) {
		return nil, fmt.Errorf("mp3 encoder: bitrate %d b/s is not an MP3 bitrate at %d Hz; use one of %s b/s", bitrate, outRate, joinInts(allowed, 1000))
	}
	gf := C.lame_init()
	if gf == nil {
		return nil, fmt.Errorf("mp3 encoder: cannot allocate the LAME encoder")
	}
	e := &mp3Encoder{state: state{format: MP3}, w: w, gf: gf, inRate: inRate}
	e.cleanup = runtime.AddCleanup(e, func(gf C.lame_t) { C.lame_close(gf) }, gf)
	if C.lame_set_in_samplerate(gf, C.int(inRate)) < 0 ||
		C.lame_set_out_samplerate(gf, C.int(outRate)) < 0 ||
		C.lame_set_num_channels(gf, 1) < 0 ||
		C.lame_set_mode(gf, C.MONO) < 0 ||
		C.lame_set_VBR(gf, C.vbr_off) < 0 ||
		C.lame_set_brate(gf, C.int(kbps)) < 0 ||
		C.lame_set_bWriteVbrTag(gf, 0) < 0 ||
		C.lame_set_disable_reservoir(gf, 1) < 0 {
		e.free()
		return nil, fmt.Errorf("mp3 encoder: LAME refused the settings (%d Hz in, %d Hz out, %d kb/s)", inRate, outRate, kbps)
	}
	if r := C.lame_init_params(gf); r < 0 {
		e.free()
		return nil, fmt.Errorf("mp3 encoder: LAME refused the settings (%d Hz in, %d Hz out, %d kb/s): lame_init_params returned %d", inRate, outRate, kbps, int(r))
	}
	e.rate = int(C.lame_get_out_samplerate(gf))
	return e, nil
}

func (e *mp3Encoder) Write(pcm []float32) error {
	if err := e.check(); err != nil {
		return err
	}
	for len(pcm) > 0 {
		n := min(len(pcm), mp3Piece)
		// LAME's worst case for its output (lame.h), for the samples at
		// the output rate.
		size := 5*n*max(1, (e.rate+e.inRate-1)/e.inRate)/4 + 7200
		if cap(e.buf) < size {
			e.buf = make([]byte, size)
		}
		buf := e.buf[:size]
		in := (*C.float)(unsafe.Pointer(&pcm[0]))
		r := C.lame_encode_buffer_ieee_float(e.gf, in, in, C.int(n), (*C.uchar)(unsafe.Pointer(&buf[0])), C.int(size))
		if r < 0 {
			return e.fail(fmt.Errorf("encoding %d samples: %s", n, lameError(r)))
		}
		if err := e.write(e.w, buf[:r]); err != nil {
			return err
		}
		pcm = pcm[n:]
	}
	return nil
}

func (e *mp3Encoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	defer e.free()
	if e.err != nil {
		return e.err
	}
	const size = 7200 // enough for the last frames (lame.h)
	if cap(e.buf) < size {
		e.buf = make([]byte, size)
	}
	buf := e.buf[:size]
	r := C.lame_encode_flush(e.gf, (*C.uchar)(unsafe.Pointer(&buf[0])), C.int(size))
	if r < 0 {
		return e.fail(fmt.Errorf("ending the stream: %s", lameError(r)))
	}
	return e.write(e.w, buf[:r])
}

// free releases the LAME encoder.
func (e *mp3Encoder) free() {
	e.cleanup.Stop()
	C.lame_close(e.gf)
	e.gf = nil
}

func (e *mp3Encoder) Rate() int { return e.rate }

// lameError names an error code of lame_encode_buffer (lame.h).
func lameError(code C.int) string {
	what := map[C.int]string{-1: "output buffer too small", -2: "out of memory", -3: "not initialised", -4: "psychoacoustic model failed"}[code]
	if what == "" {
		what = "unknown error"
	}
	return fmt.Sprintf("%s (LAME error %d)", what, int(code))
}

// joinInts lists values divided by unit ("8000, 11025" or "32000, 40000").
func joinInts(values []int, unit int) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = strconv.Itoa(v * unit)
	}
	return strings.Join(s, ", ")
}
