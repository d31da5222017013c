package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The tests here cross the RIFF/RF64 threshold with kilobytes by lowering
// riffLimit, and read the files with rf64Parse, written from EBU Tech 3306
// rather than from the writer's code.

// setRIFFLimit lowers the plain-RIFF threshold for one test.
func setRIFFLimit(t *testing.T, limit int64) {
	t.Helper()
	old := riffLimit
	riffLimit = limit
	t.Cleanup(func() { riffLimit = old })
}

// fileHeaderLen is the header length of a seekable file: RIFF(12) +
// JUNK/ds64(8+28) + fmt(8+16, float 8+18) + fact (float only, 8+4) + data(8).
func fileHeaderLen(f WAVFormat) int {
	if f == WAVFloat32 {
		return 94
	}
	return 80
}

// limitAfter is the riffLimit at which a file holds exactly n samples as a
// plain RIFF and becomes RF64 with the next one.
func limitAfter(f WAVFormat, n int) int64 {
	return int64(fileHeaderLen(f) - 8 + n*f.bytesPerSample())
}

// wavFile is what rf64Parse read.
type wavFile struct {
	form                string // "RIFF" or "RF64"
	first               string // the first chunk after "WAVE"
	firstBody           []byte
	riff32, data32      uint32 // the 32-bit size fields as written
	fact32              uint32
	hasFact             bool
	riffSize, dataSize  uint64 // the sizes that count: ds64's in an RF64 file
	sampleCount         uint64 // ds64's sample count (RF64 only)
	tag, channels, bits uint16
	rate                uint32
	dataOff             int
	data                []byte
	stream              bool // sizes say "until end of stream"
}

// rf64Parse reads a RIFF/WAVE or RF64 file: in RF64 a 32-bit size of
// 0xFFFFFFFF means "see ds64", in RIFF it means "until end of stream".
func rf64Parse(b []byte) (*wavFile, error) {
	le := binary.LittleEndian
	if len(b) < 12 || string(b[8:12]) != "WAVE" {
		return nil, errors.New("no WAVE form")
	}
	w := &wavFile{form: string(b[:4]), riff32: le.Uint32(b[4:])}
	switch w.form {
	case "RIFF":
		w.riffSize = uint64(w.riff32)
	case "RF64":
		if len(b) < 48 || string(b[12:16]) != "ds64" || le.Uint32(b[16:]) < 28 {
			return nil, errors.New("RF64 without a ds64 chunk first")
		}
		if w.riff32 != math.MaxUint32 {
			return nil, errors.New("RF64 RIFF size is not 0xFFFFFFFF")
		}
		w.riffSize, w.dataSize, w.sampleCount = le.Uint64(b[20:]), le.Uint64(b[28:]), le.Uint64(b[36:])
		if le.Uint32(b[44:]) != 0 {
			return nil, errors.New("ds64 table not empty")
		}
	default:
		return nil, errors.New("form " + strconv.Quote(w.form))
	}
	for p := 12; ; {
		if p+8 > len(b) {
			return nil, errors.New("no data chunk")
		}
		id, size := string(b[p:p+4]), uint64(le.Uint32(b[p+4:]))
		body := p + 8
		if p == 12 {
			w.first = id
		}
		if id == "data" {
			w.data32, w.dataOff = uint32(size), body
			switch {
			case w.form == "RF64" && size == math.MaxUint32:
				size = w.dataSize
			case w.form == "RIFF" && size == math.MaxUint32:
				w.stream = true
				size = uint64(len(b) - body)
				w.riffSize = uint64(len(b) - 8)
			}
			if body+int(size) > len(b) {
				return nil, errors.New("data chunk runs past the end of the file")
			}
			w.dataSize, w.data = size, b[body:body+int(size)]
			return w, nil
		}
		if body+int(size) > len(b) {
			return nil, errors.New("chunk " + id + " runs past the end of the file")
		}
		chunk := b[body : body+int(size)]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, errors.New("short fmt chunk")
			}
			w.tag, w.channels, w.rate, w.bits = le.Uint16(chunk), le.Uint16(chunk[2:]), le.Uint32(chunk[4:]), le.Uint16(chunk[14:])
		case "fact":
			w.fact32, w.hasFact = le.Uint32(chunk), true
		}
		if p == 12 {
			w.firstBody = chunk
		}
		p = body + int(size) + int(size&1)
	}
}

// checkWAVBytes checks that b is a valid file of format holding exactly the
// samples want (as written to the WAVWriter), as a plain RIFF or RF64 per
// form; it returns what it read.
func checkWAVBytes(t *testing.T, what string, b []byte, format WAVFormat, want []float32, form string) *wavFile {
	t.Helper()
	w, err := rf64Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	bps := format.bytesPerSample()
	n := uint64(len(want))
	if w.form != form {
		t.Fatalf("%s: %s file with %d samples, want %s", what, w.form, n, form)
	}
	if w.dataOff != fileHeaderLen(format) {
		t.Errorf("%s: samples start at %d, want %d", what, w.dataOff, fileHeaderLen(format))
	}
	if w.dataSize != n*uint64(bps) || w.riffSize != uint64(w.dataOff)-8+w.dataSize || uint64(len(b)) < w.riffSize+8 {
		t.Errorf("%s: data size %d, RIFF size %d, file %d bytes; want %d samples of %d bytes after a %d-byte header",
			what, w.dataSize, w.riffSize, len(b), n, bps, w.dataOff)
	}
	wantTag, wantFirst := uint16(1), "JUNK"
	if format == WAVFloat32 {
		wantTag = 3
	}
	if form == "RF64" {
		wantFirst = "ds64"
		if w.data32 != math.MaxUint32 || w.sampleCount != n {
			t.Errorf("%s: RF64 data size field %#x, ds64 sample count %d; want 0xFFFFFFFF, %d", what, w.data32, w.sampleCount, n)
		}
	} else if w.riff32 != uint32(w.riffSize) || w.data32 != uint32(w.dataSize) {
		t.Errorf("%s: RIFF sizes %d, %d", what, w.riff32, w.data32)
	}
	if w.first != wantFirst || len(w.firstBody) != 28 || (form == "RIFF" && !bytes.Equal(w.firstBody, make([]byte, 28))) {
		t.Errorf("%s: first chunk %q of %d bytes (% x), want %s of 28 (zeros in JUNK)", what, w.first, len(w.firstBody), w.firstBody, wantFirst)
	}
	if w.tag != wantTag || w.channels != 1 || w.rate != SampleRate || int(w.bits) != 8*bps {
		t.Errorf("%s: fmt tag %d, %d channels, %d Hz, %d bits", what, w.tag, w.channels, w.rate, w.bits)
	}
	if format == WAVFloat32 {
		wantFact := uint32(n)
		if form == "RF64" {
			wantFact = math.MaxUint32
		}
		if !w.hasFact || w.fact32 != wantFact {
			t.Errorf("%s: fact %v %#x, want %#x", what, w.hasFact, w.fact32, wantFact)
		}
	}
	checkSamples(t, what, w.data, format, want)
	return w
}

// checkSamples compares the sample bytes with what was written: float32 bit
// for bit, PCM16 as pcm16 converts.
func checkSamples(t *testing.T, what string, data []byte, format WAVFormat, want []float32) {
	t.Helper()
	le := binary.LittleEndian
	if len(data) != len(want)*format.bytesPerSample() {
		t.Fatalf("%s: %d bytes of samples, want %d samples", what, len(data), len(want))
	}
	for i, s := range want {
		if format == WAVFloat32 {
			if got := le.Uint32(data[4*i:]); got != math.Float32bits(s) {
				t.Fatalf("%s: sample %d is %#x, wrote %#x", what, i, got, math.Float32bits(s))
			}
		} else if got := int16(le.Uint16(data[2*i:])); got != PCM16(s) {
			t.Fatalf("%s: sample %d is %d, want %d", what, i, got, PCM16(s))
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWAVRF64PastLimit: a file that grows past the RIFF limit is an RF64
// whose ds64 sizes count exactly the bytes written, with every sample, and
// sox reads it.
func TestWAVRF64PastLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		setRIFFLimit(t, limitAfter(format, 1000))
		path := filepath.Join(t.TempDir(), "long.wav")
		w, err := CreateWAV(path, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(3001, 11)
		writeChunks(t, w, sig)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := readFile(t, path)
		f := checkWAVBytes(t, format.String(), b, format, sig, "RF64")
		if f.riffSize+8 != uint64(len(b)) {
			t.Errorf("%v: ds64 RIFF size %d for a file of %d bytes", format, f.riffSize, len(b))
		}
		checkWithSox(t, path, format, len(sig))
	}
}

// TestWAVPlainRIFFUnderLimit: under the limit the file is a plain
// RIFF/WAVE whose first chunk is a 28-byte zero JUNK (the room for ds64),
// and go-audio/wav and sox read it.
func TestWAVPlainRIFFUnderLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		path := filepath.Join(t.TempDir(), "short.wav")
		w, err := CreateWAV(path, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		if w.dataOff != int64(fileHeaderLen(format)) {
			t.Fatalf("%v: header of %d bytes, want %d", format, w.dataOff, fileHeaderLen(format))
		}
		sig := testSignal(5000, 12)
		writeChunks(t, w, sig)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := readFile(t, path)
		if f := checkWAVBytes(t, format.String(), b, format, sig, "RIFF"); f.riffSize+8 != uint64(len(b)) {
			t.Errorf("%v: RIFF size %d for a file of %d bytes", format, f.riffSize, len(b))
		}
		got, d := decodeWAV(t, path)
		if int(d.WavAudioFormat) != map[WAVFormat]int{WAVPCM16: 1, WAVFloat32: 3}[format] || len(got) != len(sig) {
			t.Fatalf("%v: go-audio/wav reads format %d, %d samples; wrote %d", format, d.WavAudioFormat, len(got), len(sig))
		}
		for i := range sig {
			want := float32(PCM16(sig[i]))
			if format == WAVFloat32 {
				want = sig[i]
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%v: go-audio/wav sample %d is %v, want %v", format, i, got[i], want)
			}
		}
		checkWithSox(t, path, format, len(sig))
	}
}

// TestWAVValidAcrossLimit copies the .part file after every Write while the
// file grows through the limit (as if the process were killed there): each
// copy is valid with exactly the samples so far, a plain RIFF up to and at
// the limit and RF64 from the first sample past it.
func TestWAVValidAcrossLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		setRIFFLimit(t, limitAfter(format, 1000))
		dir := t.TempDir()
		w, err := CreateWAV(filepath.Join(dir, "out.wav"), SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(4500, 13)
		total := 0
		for i, n := range []int{0, 1, 998, 1, 1, 499, 2000, 0, 1000} {
			if err := w.Write(sig[total : total+n]); err != nil {
				t.Fatal(err)
			}
			total += n
			form := "RIFF"
			if total > 1000 {
				form = "RF64"
			}
			what := format.String() + " after " + strconv.Itoa(total) + " samples"
			snap := filepath.Join(dir, "snap"+strconv.Itoa(i)+".wav")
			copyFile(t, w.tmp, snap)
			checkWAVBytes(t, what, readFile(t, snap), format, sig[:total], form)
			if got := soxi(t, "s", snap); got != strconv.Itoa(total) {
				t.Errorf("%s: soxi -s = %s", what, got)
			}
			if form == "RIFF" && total > 0 {
				if got, _ := decodeWAV(t, snap); len(got) != total {
					t.Errorf("%s: go-audio/wav reads %d", what, len(got))
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// nopWriterAt stands for a seekable destination in tests that build
// headers only.
type nopWriterAt struct{}

func (nopWriterAt) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// TestWAVHeaderAtRealLimit builds the headers on both sides of the real
// 32-bit limit (no audio is written): the last plain RIFF has a RIFF size of
// 0xFFFFFFFE, one sample more is RF64 with 64-bit sizes.
func TestWAVHeaderAtRealLimit(t *testing.T) {
	le := binary.LittleEndian
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		bps := uint64(format.bytesPerSample())
		hdr := uint64(fileHeaderLen(format))
		last := (math.MaxUint32 - 1 - (hdr - 8)) / bps
		w := &WAVWriter{at: nopWriterAt{}, format: format, rate: SampleRate, samples: int64(last)}
		h := w.appendHeader(nil)
		if uint64(len(h)) != hdr || string(h[:4]) != "RIFF" || string(h[12:16]) != "JUNK" ||
			le.Uint32(h[4:]) != math.MaxUint32-1 || le.Uint32(h[len(h)-4:]) != uint32(last*bps) {
			t.Errorf("%v, %d samples: want RIFF size 0xFFFFFFFE, data size %d; header % x", format, last, last*bps, h)
		}
		w.samples++
		h = w.appendHeader(nil)
		if string(h[:4]) != "RF64" || le.Uint32(h[4:]) != math.MaxUint32 || string(h[12:16]) != "ds64" || le.Uint32(h[len(h)-4:]) != math.MaxUint32 {
			t.Fatalf("%v, %d samples: want RF64 with a ds64 chunk; header % x", format, last+1, h)
		}
		riff, data, count := le.Uint64(h[20:]), le.Uint64(h[28:]), le.Uint64(h[36:])
		if riff != hdr-8+(last+1)*bps || riff <= math.MaxUint32-1 || data != (last+1)*bps || count != last+1 {
			t.Errorf("%v: ds64 sizes %d, %d, count %d; want %d, %d, %d", format, riff, data, count, hdr-8+(last+1)*bps, (last+1)*bps, last+1)
		}
	}
}

// TestWAVStreamPastLimit: on a pipe the header says "until end of stream"
// and carries no JUNK (it cannot be rewritten), and the stream goes on past
// the limit with every sample.
func TestWAVStreamPastLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		setRIFFLimit(t, 100)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(pr)
			got <- b
		}()
		w, err := NewWAVWriter(pw, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(20000, 14)
		writeChunks(t, w, sig)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		b := <-got
		pr.Close()
		f, err := rf64Parse(b)
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		hdr := map[WAVFormat]int{WAVPCM16: 44, WAVFloat32: 58}[format]
		if f.form != "RIFF" || !f.stream || f.riff32 != math.MaxUint32 || f.first != "fmt " || f.dataOff != hdr {
			t.Errorf("%v: %s, sizes %#x %#x, first chunk %q, samples at %d; want RIFF, 0xFFFFFFFF, fmt, %d",
				format, f.form, f.riff32, f.data32, f.first, f.dataOff, hdr)
		}
		if f.hasFact && f.fact32 != math.MaxUint32 {
			t.Errorf("%v: fact %#x on a stream", format, f.fact32)
		}
		checkSamples(t, format.String()+" stream", f.data, format, sig)
	}
}

// TestWAVTruncateAcrossLimit: Truncate keeps RF64 while the file stays over
// the limit and makes it a plain RIFF again under it; writing on crosses
// again.
func TestWAVTruncateAcrossLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		setRIFFLimit(t, limitAfter(format, 1000))
		path := filepath.Join(t.TempDir(), "out.wav")
		w, err := CreateWAV(path, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(3000, 15)
		if err := w.Write(sig); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			n    int64
			form string
		}{{2000, "RF64"}, {1001, "RF64"}, {1000, "RIFF"}, {10, "RIFF"}}
		for _, s := range steps {
			if err := w.Truncate(s.n); err != nil {
				t.Fatal(err)
			}
			b := readFile(t, w.tmp)
			f := checkWAVBytes(t, format.String()+" truncated to "+strconv.FormatInt(s.n, 10), b, format, sig[:s.n], s.form)
			if f.riffSize+8 != uint64(len(b)) {
				t.Errorf("%v: RIFF size %d for a file of %d bytes", format, f.riffSize, len(b))
			}
		}
		more := testSignal(1500, 16)
		if err := w.Write(more); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		want := append(append([]float32{}, sig[:10]...), more...)
		checkWAVBytes(t, format.String()+" written on", readFile(t, path), format, want, "RF64")
		checkWithSox(t, path, format, len(want))
	}
}

// TestWAVFailedWriteAcrossLimit: a write that fails (disk full, a sample
// torn) in the batch that crosses the limit leaves an RF64 header for the
// complete samples that reached the file.
func TestWAVFailedWriteAcrossLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		bps := format.bytesPerSample()
		setRIFFLimit(t, limitAfter(format, 1000))
		path := filepath.Join(t.TempDir(), "out.wav")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		budget := fileHeaderLen(format) + 1100*bps + 1 // 1100 samples and a torn one
		w, err := NewWAVWriter(&failingFile{File: f, budget: budget}, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(2000, 17)
		if err := w.Write(sig[:900]); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(sig[900:]); !errors.Is(err, errDiskFull) {
			t.Fatalf("%v: write error %v, want the simulated one", format, err)
		}
		if err := w.Close(); !errors.Is(err, errDiskFull) {
			t.Fatalf("%v: Close after a failure: %v, want the write error", format, err)
		}
		f.Close()
		if w.Samples() != 1100 {
			t.Fatalf("%v: Samples() = %d, want 1100", format, w.Samples())
		}
		checkWAVBytes(t, format.String()+" after a failed write", readFile(t, path), format, sig[:1100], "RF64")
		checkWithSox(t, path, format, 1100)
	}
}

// headerFailFile refuses header rewrites once fail is set, as a process
// killed between appending samples and rewriting the header leaves it.
type headerFailFile struct {
	*os.File
	fail bool
}

func (f *headerFailFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fail {
		return 0, errDiskFull
	}
	return f.File.WriteAt(p, off)
}

// TestWAVHeaderNotRewrittenAtLimit: if the header cannot be rewritten after
// the samples that cross the limit were appended, the file is still the
// plain RIFF of the samples before them.
func TestWAVHeaderNotRewrittenAtLimit(t *testing.T) {
	for _, format := range []WAVFormat{WAVPCM16, WAVFloat32} {
		setRIFFLimit(t, limitAfter(format, 1000))
		path := filepath.Join(t.TempDir(), "out.wav")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		hf := &headerFailFile{File: f}
		w, err := NewWAVWriter(hf, SampleRate, format)
		if err != nil {
			t.Fatal(err)
		}
		sig := testSignal(1500, 18)
		if err := w.Write(sig[:1000]); err != nil {
			t.Fatal(err)
		}
		hf.fail = true
		if err := w.Write(sig[1000:]); !errors.Is(err, errDiskFull) {
			t.Fatalf("%v: %v, want the header error", format, err)
		}
		w.Close()
		f.Close()
		checkWAVBytes(t, format.String()+" with the header not rewritten", readFile(t, path), format, sig[:1000], "RIFF")
		if got, _ := decodeWAV(t, path); len(got) != 1000 {
			t.Errorf("%v: go-audio/wav reads %d samples, want 1000", format, len(got))
		}
		checkWithSox(t, path, format, 1000)
	}
}
