package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// WAVFormat is the sample encoding of a WAV file.
type WAVFormat int

const (
	// WAVPCM16 is 16-bit signed PCM (WAVE format 1), the default: what every
	// player reads. Samples are clamped to [−1, 1] and scaled by 32767.
	WAVPCM16 WAVFormat = iota
	// WAVFloat32 is 32-bit IEEE float (WAVE format 3): the model's samples
	// bit for bit.
	WAVFloat32
)

func (f WAVFormat) String() string {
	switch f {
	case WAVPCM16:
		return "pcm16"
	case WAVFloat32:
		return "float32"
	}
	return fmt.Sprintf("WAVFormat(%d)", int(f))
}

// ParseWAVFormat reads a format name as given on a command line: "pcm16"
// (or "16") and "float32" (or "float", "f32", "32").
func ParseWAVFormat(s string) (WAVFormat, error) {
	switch s {
	case "pcm16", "16", "s16", "int16":
		return WAVPCM16, nil
	case "float32", "float", "f32", "32":
		return WAVFloat32, nil
	}
	return 0, fmt.Errorf("WAV format %q is not supported; use pcm16 or float32", s)
}

// bytesPerSample of a format.
func (f WAVFormat) bytesPerSample() int {
	if f == WAVFloat32 {
		return 4
	}
	return 2
}

// WAVWriter streams mono samples to a WAV file as they arrive. When the
// destination can be rewritten in place (a regular file), the header is
// rewritten after every Write, so the file is valid with exactly the samples
// written so far at any moment: after Close, after a cancelled run, after a
// failed write, even after the process is killed. Such a file has no length
// limit: it is a plain RIFF/WAVE up to 4 GiB, which every player reads, and
// becomes RF64 (EBU Tech 3306, read by sox and ffmpeg) in the same place
// when it grows past that, because the 32-bit RIFF sizes cannot count it
// (hours of float32 audio reach it: 4 GiB is 6.8 h at 44.1 kHz).
// On a pipe the sizes are written as 0xFFFFFFFF ("until end of stream"),
// which sox and most players accept, and a stream may go on indefinitely.
//
// A WAVWriter is used by one goroutine at a time.
type WAVWriter struct {
	w       io.Writer
	at      io.WriterAt // nil when sizes cannot be patched
	file    *os.File    // set when the writer owns the file (CreateWAV)
	tmp     string      // temporary path renamed to path on Close
	path    string
	format  WAVFormat
	rate    int
	dataOff int64 // offset of the first sample
	samples int64 // complete samples in the file
	buf     []byte
	hdr     []byte // the header last built, reused by patch
	err     error  // first write error; later Writes return it
	closed  bool
}

// CreateWAV starts a WAV file at path without disturbing what is there now:
// samples go to a temporary file "<path>.<random>.part" in the same
// directory, which Close renames over path (atomically, on POSIX). If the
// process dies before Close, the .part file is a valid WAV of what was
// written. rate is the sample rate (SampleRate for Zonos audio).
func CreateWAV(path string, rate int, format WAVFormat) (*WAVWriter, error) {
	if err := checkWAVArgs(rate, format); err != nil {
		return nil, fmt.Errorf("WAV %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("WAV %s: is a directory; give a file name", path)
	}
	f, err := createPart(dir, base)
	if err != nil {
		return nil, fmt.Errorf("WAV %s: cannot create a file in %s: %w; check that the directory exists and is writable", path, dir, err)
	}
	w, err := NewWAVWriter(f, rate, format)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("WAV %s: %w", path, err)
	}
	w.file, w.tmp, w.path = f, f.Name(), path
	return w, nil
}

// createPart creates a new file "<base>.<random>.part" in dir with the
// permissions os.Create gives (0666 less the umask): the .part file becomes
// the WAV file by rename, so it must be readable by whoever may read the
// directory's other files (os.CreateTemp would make it 0600).
func createPart(dir, base string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, base+"."+strconv.FormatUint(uint64(rand.Uint32()), 10)+".part")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "createpart", Path: filepath.Join(dir, base+".*.part"), Err: fs.ErrExist}
}

// NewWAVWriter writes a WAV header to w and returns a writer for the
// samples. If w is a regular *os.File (or another io.WriterAt that is not a
// pipe) the header sizes are kept current; otherwise they say "unknown".
// Close does not close w.
func NewWAVWriter(w io.Writer, rate int, format WAVFormat) (*WAVWriter, error) {
	if err := checkWAVArgs(rate, format); err != nil {
		return nil, err
	}
	ww := &WAVWriter{w: w, format: format, rate: rate}
	if at, ok := w.(io.WriterAt); ok {
		ww.at = at
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
				ww.at = nil // stdout on a pipe or terminal
			} else if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
				return nil, fmt.Errorf("WAV header: the file is not at offset 0 (at %d); pass a new or truncated file", off)
			}
		}
	}
	ww.hdr = ww.appendHeader(nil)
	ww.dataOff = int64(len(ww.hdr))
	if _, err := w.Write(ww.hdr); err != nil {
		return nil, fmt.Errorf("WAV header: %w", err)
	}
	return ww, nil
}

func checkWAVArgs(rate int, format WAVFormat) error {
	if rate <= 0 || rate > MaxResampleRate {
		return fmt.Errorf("sample rate %d Hz is out of range; use %d", rate, SampleRate)
	}
	if format != WAVPCM16 && format != WAVFloat32 {
		return fmt.Errorf("unknown sample format %v; use pcm16 or float32", format)
	}
	return nil
}

// patch rewrites the header for the samples written so far, whole and in
// one WriteAt, so the switch to RF64 and back is never half made.
func (w *WAVWriter) patch() error {
	if w.at == nil {
		return nil
	}
	w.hdr = w.appendHeader(w.hdr[:0])
	_, err := w.at.WriteAt(w.hdr, 0)
	return err
}

// Write appends samples and, where possible, updates the header to count
// them. After a failed write the file still holds a valid header for the
// complete samples that reached it (a torn trailing sample is cut off), and
// every later Write returns the same error.
func (w *WAVWriter) Write(samples []float32) error {
	if w.closed {
		return fmt.Errorf("WAV %s: write after Close", w.name())
	}
	if w.err != nil {
		return w.err
	}
	if len(samples) == 0 {
		return nil
	}
	bps := w.format.bytesPerSample()
	w.buf = w.buf[:0]
	le := binary.LittleEndian
	if w.format == WAVFloat32 {
		for _, s := range samples {
			w.buf = le.AppendUint32(w.buf, math.Float32bits(s))
		}
	} else {
		for _, s := range samples {
			w.buf = le.AppendUint16(w.buf, uint16(PCM16(s)))
		}
	}
	n, err := w.w.Write(w.buf)
	w.samples += int64(n / bps)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("WAV %s: writing samples: %w", w.name(), err)
		if n%bps != 0 && w.file != nil {
			w.file.Truncate(w.dataOff + w.samples*int64(bps)) // drop the torn sample
		}
		if perr := w.patch(); perr != nil {
			w.err = fmt.Errorf("%w; and the header could not be updated: %v", w.err, perr)
		}
		return w.err
	}
	if err := w.patch(); err != nil {
		w.err = fmt.Errorf("WAV %s: updating the header: %w", w.name(), err)
		return w.err
	}
	return nil
}

// PCM16 converts a float sample to 16-bit PCM: clamp to [−1, 1], scale by
// 32767 (so ±1 maps to ±32767 and 0 stays 0), round half away from zero.
// NaN becomes 0. Every 16-bit output (WAV files, the speech server's
// encoders) quantises with it, so they all carry the same samples.
func PCM16(s float32) int16 {
	switch {
	case s != s:
		return 0
	case s >= 1:
		return 32767
	case s <= -1:
		return -32767
	case s >= 0: // float64: the product is exact, so the rounding is too
		return int16(float64(s)*32767 + 0.5)
	default:
		return int16(float64(s)*32767 - 0.5)
	}
}

// Samples is the number of samples in the file so far.
func (w *WAVWriter) Samples() int64 { return w.samples }

// Path is where Close puts the file ("" for NewWAVWriter).
func (w *WAVWriter) Path() string { return w.path }

// Format is the sample encoding.
func (w *WAVWriter) Format() WAVFormat { return w.format }

// Truncate cuts the audio to its first n samples, e.g. to keep only what was
// actually played when an utterance is cancelled. It needs a file opened by
// CreateWAV or an *os.File given to NewWAVWriter; it cannot grow the audio.
// An RF64 file cut back under 4 GiB becomes a plain RIFF/WAVE again.
func (w *WAVWriter) Truncate(n int64) error {
	if w.closed {
		return fmt.Errorf("WAV %s: truncate after Close", w.name())
	}
	if n < 0 || n > w.samples {
		return fmt.Errorf("WAV %s: cannot truncate %d samples to %d; the length must be 0..%d", w.name(), w.samples, n, w.samples)
	}
	f := w.file
	if f == nil {
		f, _ = w.w.(*os.File)
	}
	if f == nil || w.at == nil {
		return fmt.Errorf("WAV %s: cannot truncate a stream; write to a regular file", w.name())
	}
	if err := f.Truncate(w.dataOff + n*int64(w.format.bytesPerSample())); err != nil {
		return fmt.Errorf("WAV %s: truncating: %w", w.name(), err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return fmt.Errorf("WAV %s: truncating: %w", w.name(), err)
	}
	w.samples = n
	return w.patch()
}

// Close finishes the file: the header is made current, the data is synced
// to disk and, for CreateWAV, the temporary file is renamed to the final
// path. After a failed Write, Close still keeps the valid partial file
// and returns the write error. Close is idempotent.
func (w *WAVWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.err
	if perr := w.patch(); perr != nil && err == nil {
		err = fmt.Errorf("WAV %s: updating the header: %w", w.name(), perr)
	}
	if w.file == nil {
		return err
	}
	if serr := w.file.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("WAV %s: syncing to disk: %w", w.name(), serr)
	}
	if cerr := w.file.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("WAV %s: closing: %w", w.name(), cerr)
	}
	if rerr := os.Rename(w.tmp, w.path); rerr != nil {
		return errors.Join(err, fmt.Errorf("WAV %s: the audio is kept in %s: %w", w.path, w.tmp, rerr))
	}
	syncDir(filepath.Dir(w.path))
	return err
}

// Abort stops writing and deletes the temporary file of CreateWAV, leaving
// any earlier file at the path untouched (for runs that produced nothing
// worth keeping). For NewWAVWriter it only stops writing.
func (w *WAVWriter) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.file == nil {
		return nil
	}
	w.file.Close()
	if err := os.Remove(w.tmp); err != nil {
		return fmt.Errorf("WAV %s: removing the temporary file: %w", w.tmp, err)
	}
	return nil
}

func (w *WAVWriter) name() string {
	if w.path != "" {
		return w.path
	}
	return "stream"
}

// syncDir makes a rename durable; failures are ignored (some file systems
// cannot sync directories, and the data itself is already synced).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
