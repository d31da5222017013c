package audio

import (
	"encoding/binary"
	"math"
)

// Header layout. go-audio/wav's Encoder is not used for writing: it writes
// format 3 only as a tag (its Write takes integer buffers, so float samples
// would go through one reflective binary.Write per sample), it leaves
// placeholder sizes in the header until Close, and after a failed write its
// Close patches in the size of frames that never reached the file. This
// writer keeps the header valid after every Write instead. go-audio/wav's
// Decoder reads the files back in the tests.
//
// A file's header starts with a 36-byte chunk after "WAVE": "JUNK" while the
// file fits the 32-bit RIFF sizes (readers skip it), rewritten in place as
// the "ds64" chunk of RF64 (EBU Tech 3306) once it does not, so a recording
// of any length keeps a valid header. A stream has no such chunk: its header
// is written once, with sizes that say "until end of stream", and can never
// be upgraded, so the room would go unused.
const (
	pcmHeaderLen   = 44 // RIFF(12) + fmt (8+16) + data(8): a stream's header
	floatHeaderLen = 58 // RIFF(12) + fmt (8+18, cbSize 0) + fact(8+4) + data(8)
	ds64BodyLen    = 28 // riffSize64, dataSize64, sampleCount64, tableLength 0 (EBU Tech 3306)
	ds64ChunkLen   = 8 + ds64BodyLen
	unknownSize    = math.MaxUint32 // a 32-bit size field meaning "see ds64" (RF64) or "until end of stream"
)

// riffLimit is the largest RIFF chunk size (file length less 8) written as a
// plain RIFF/WAVE; a larger file is written as RF64. 0xFFFFFFFF itself is
// kept for unknownSize. A variable so that tests cross it with kilobytes.
var riffLimit int64 = math.MaxUint32 - 1

// appendHeader appends the header for the samples written so far to dst:
// plain RIFF with a JUNK chunk while the file fits riffLimit, RF64 beyond,
// and the stream form when the sizes cannot be rewritten later. The header
// is a function of the format, the destination and the sample count only,
// so rewriting it whole is always right, also after Truncate.
func (w *WAVWriter) appendHeader(dst []byte) []byte {
	bps := w.format.bytesPerSample()
	le := binary.LittleEndian
	start := len(dst)
	h := append(dst, "RIFF\x00\x00\x00\x00WAVE"...)
	ds64 := -1 // offset of the JUNK/ds64 chunk in h
	if w.at != nil {
		ds64 = len(h)
		h = append(h, "JUNK"...)
		h = le.AppendUint32(h, ds64BodyLen)
		h = append(h, make([]byte, ds64BodyLen)...)
	}
	h = append(h, "fmt "...)
	if w.format == WAVFloat32 {
		h = le.AppendUint32(h, 18)
		h = le.AppendUint16(h, 3) // WAVE_FORMAT_IEEE_FLOAT
	} else {
		h = le.AppendUint32(h, 16)
		h = le.AppendUint16(h, 1) // WAVE_FORMAT_PCM
	}
	h = le.AppendUint16(h, 1) // mono
	h = le.AppendUint32(h, uint32(w.rate))
	h = le.AppendUint32(h, uint32(w.rate*bps))
	h = le.AppendUint16(h, uint16(bps)) // block align
	h = le.AppendUint16(h, uint16(8*bps))
	fact := -1 // offset of the fact chunk's sample count in h
	if w.format == WAVFloat32 {
		h = le.AppendUint16(h, 0)                // cbSize
		h = append(h, "fact\x04\x00\x00\x00"...) // non-PCM formats carry a fact chunk
		fact = len(h)
		h = append(h, 0, 0, 0, 0)
	}
	h = append(h, "data\x00\x00\x00\x00"...)

	data := w.samples * int64(bps)
	riff := int64(len(h)-start) - 8 + data
	riff32, data32, samples32 := uint32(unknownSize), uint32(unknownSize), uint32(unknownSize)
	switch {
	case w.at == nil: // a stream: every size stays "unknown"
	case riff > riffLimit:
		copy(h[start:], "RF64")
		b := h[ds64:]
		copy(b, "ds64")
		le.PutUint64(b[8:], uint64(riff))
		le.PutUint64(b[16:], uint64(data))
		le.PutUint64(b[24:], uint64(w.samples))
		le.PutUint32(b[32:], 0) // no table of other chunks' sizes
	default:
		riff32, data32, samples32 = uint32(riff), uint32(data), uint32(w.samples)
	}
	le.PutUint32(h[start+4:], riff32)
	le.PutUint32(h[len(h)-4:], data32)
	if fact >= 0 {
		le.PutUint32(h[fact:], samples32)
	}
	return h
}
