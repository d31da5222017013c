package encode

/*
#cgo pkg-config: libopusenc
#include <stdlib.h>
#include <opusenc.h>

// zs_opus_ctl calls ope_encoder_ctl, which is variadic and so cannot be
// called from Go, for a request that takes one opus_int32: what the
// OPUS_SET_x and OPE_SET_x macros expand to.
static int zs_opus_ctl(OggOpusEnc *enc, int request, opus_int32 value) {
	return ope_encoder_ctl(enc, request, value);
}
*/
import "C"

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"unsafe"
)

// Opus stream parameters.
const (
	// DefaultOpusBitrate is the bitrate when Options.Bitrate is 0: what
	// opus-tools' opusenc chooses for a mono stream of input at 44.1 kHz
	// or more, 64 kb/s.
	DefaultOpusBitrate = 64000
	// Opus bitrates range over 6–510 kb/s (RFC 6716, section 2.1.1).
	minOpusBitrate, maxOpusBitrate = 6000, 510000
	// opusRate is the rate every Opus stream decodes at (RFC 7845, 5.1).
	opusRate = 48000
	// opusVendorTag is the ENCODER comment of every stream.
	opusVendorTag = "Zonos Stream"
)

// opusEncoder writes Ogg Opus with libopusenc's pull interface: after each
// ope_encoder_write_float, the pages it completed, and a page of whatever
// packets are pending (ope_encoder_get_page with flush), go to the writer.
// So the stream lags the input by one 20 ms packet plus the encoder's
// lookahead, whatever libopusenc's muxing delay (which then only splits the
// pages of one long Write, at its default of 1 s). Pulling pages keeps C
// from calling into Go at all.
type opusEncoder struct {
	state
	w       io.Writer
	enc     *C.OggOpusEnc
	cleanup runtime.Cleanup
}

func newOpus(w io.Writer, inRate int, o Options) (*opusEncoder, error) {
	if o.Rate != 0 && o.Rate != opusRate {
		return nil, fmt.Errorf("opus encoder: output rate %d Hz is not possible; Opus streams are always %d Hz (give 0)", o.Rate, opusRate)
	}
	bitrate := o.Bitrate
	if bitrate == 0 {
		bitrate = DefaultOpusBitrate
	}
	if bitrate < minOpusBitrate || bitrate > maxOpusBitrate {
		return nil, fmt.Errorf("opus encoder: bitrate %d b/s is out of Opus's range %d–%d", bitrate, minOpusBitrate, maxOpusBitrate)
	}
	comments := C.ope_comments_create()
	if comments == nil {
		return nil, fmt.Errorf("opus encoder: cannot allocate the comment header")
	}
	defer C.ope_comments_destroy(comments) // the encoder keeps a copy
	tag, val := C.CString("ENCODER"), C.CString(opusVendorTag)
	r := C.ope_comments_add(comments, tag, val)
	C.free(unsafe.Pointer(tag))
	C.free(unsafe.Pointer(val))
	if r != C.OPE_OK {
		return nil, fmt.Errorf("opus encoder: adding the ENCODER comment: %s", opeError(r))
	}
	var cerr C.int
	enc := C.ope_encoder_create_pull(comments, C.opus_int32(inRate), 1, 0, &cerr)
	if enc == nil {
		return nil, fmt.Errorf("opus encoder: creating a mono %d Hz stream: %s", inRate, opeError(cerr))
	}
	e := &opusEncoder{state: state{format: Opus}, w: w, enc: enc}
	e.cleanup = runtime.AddCleanup(e, func(enc *C.OggOpusEnc) { C.ope_encoder_destroy(enc) }, enc)
	ctls := []struct {
		name    string
		request C.int
		value   int
	}{
		// Set explicitly, which libopusenc 0.2.1 (Debian 12) needs: it
		// leaves the frame size it checks at the end of the stream
		// uninitialised otherwise (fixed in 0.3).
		{"frame duration", C.OPUS_SET_EXPERT_FRAME_DURATION_REQUEST, C.OPUS_FRAMESIZE_20_MS},
		{"bitrate", C.OPUS_SET_BITRATE_REQUEST, bitrate},
		// libopusenc holds up to 2 s of input back by default to look
		// ahead for its speech/music decisions; a stream cannot wait.
		{"decision delay", C.OPE_SET_DECISION_DELAY_REQUEST, 0},
		// The 512 bytes left by default in the comment header are for
		// editing tags in place in a file.
		{"comment padding", C.OPE_SET_COMMENT_PADDING_REQUEST, 0},
		// libopusenc takes the serial number from rand(), the same in
		// every stream of a process unless seeded.
		{"serial number", C.OPE_SET_SERIALNO_REQUEST, int(rand.Int32())},
	}
	for _, c := range ctls {
		if r := C.zs_opus_ctl(enc, c.request, C.opus_int32(c.value)); r != C.OPE_OK {
			e.free()
			return nil, fmt.Errorf("opus encoder: setting the %s to %d: %s", c.name, c.value, opeError(r))
		}
	}
	// An empty write makes the header pages and, in libopusenc 0.2.1,
	// starts the stream's end position at 0 so that a stream closed
	// without audio ends properly.
	var none C.float
	if r := C.ope_encoder_write_float(enc, &none, 0); r != C.OPE_OK {
		e.free()
		return nil, fmt.Errorf("opus encoder: writing the headers: %s", opeError(r))
	}
	if err := e.pages(); err != nil {
		e.free()
		return nil, err
	}
	return e, nil
}

func (e *opusEncoder) Write(pcm []float32) error {
	if err := e.check(); err != nil {
		return err
	}
	if len(pcm) == 0 {
		return nil
	}
	if r := C.ope_encoder_write_float(e.enc, (*C.float)(unsafe.Pointer(&pcm[0])), C.int(len(pcm))); r != C.OPE_OK {
		return e.fail(fmt.Errorf("encoding %d samples: %s", len(pcm), opeError(r)))
	}
	return e.pages()
}

// pages writes every page libopusenc has ready, ending the current page
// first so that no encoded packet waits for the next Write.
func (e *opusEncoder) pages() error {
	for {
		var page *C.uchar
		var n C.opus_int32
		switch r := C.ope_encoder_get_page(e.enc, &page, &n, 1); {
		case r == 0:
			return nil
		case r < 0:
			return e.fail(fmt.Errorf("getting an Ogg page: %s", opeError(r)))
		}
		// The page stays valid until the next call; w must not keep it
		// (io.Writer's contract).
		if err := e.write(e.w, unsafe.Slice((*byte)(unsafe.Pointer(page)), int(n))); err != nil {
			return err
		}
	}
}

func (e *opusEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	defer e.free()
	if e.err != nil {
		return e.err
	}
	if r := C.ope_encoder_drain(e.enc); r != C.OPE_OK {
		return e.fail(fmt.Errorf("ending the stream: %s", opeError(r)))
	}
	return e.pages()
}

// free releases the C encoder.
func (e *opusEncoder) free() {
	e.cleanup.Stop()
	C.ope_encoder_destroy(e.enc)
	e.enc = nil
}

func (e *opusEncoder) Rate() int { return opusRate }

// opeError is libopusenc's message for an error code.
func opeError(code C.int) string {
	return fmt.Sprintf("%s (libopusenc error %d)", C.GoString(C.ope_strerror(code)), int(code))
}
