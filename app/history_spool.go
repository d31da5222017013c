package app

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"zonostream/audio"
	"zonostream/engine"
)

// SpoolAfter is the length from which an utterance's audio goes to disk:
// past one minute (2.6 M samples, 10.6 MB) the history keeps it in a
// float32 WAV file in its spool folder and only the path in memory, so
// memory stays flat however long a reading runs. Shorter utterances stay
// in memory (HistorySamples bounds them).
const SpoolAfter = 60 * engine.SampleRate

// HistoryDiskSamples bounds the audio the history keeps on disk: two hours
// in all (1.3 GB); the oldest files go first, the newest utterance always
// stays.
const HistoryDiskSamples = 2 * 60 * 60 * engine.SampleRate

// spoolSeq numbers the spool files of this process.
var spoolSeq atomic.Int64

// pcmSpool collects one utterance's audio as it streams: in memory up to
// SpoolAfter samples, then in a WAV file in dir (audio.CreateWAV, valid
// at every moment) with nothing left in memory. With dir "" everything
// stays in memory.
type pcmSpool struct {
	dir   string
	after int
	mem   []float32
	w     *audio.WAVWriter
	n     int
	err   error // the file failed: what reached it is kept, later audio is not
}

func newPCMSpool(dir string, after int) *pcmSpool {
	return &pcmSpool{dir: dir, after: after}
}

// Write adds samples.
func (s *pcmSpool) Write(pcm []float32) {
	if s.w == nil {
		s.mem = append(s.mem, pcm...)
		s.n = len(s.mem)
		if s.dir != "" && len(s.mem) > s.after {
			s.toDisk()
		}
		return
	}
	if s.err != nil {
		return
	}
	if err := s.w.Write(pcm); err != nil {
		s.err = err
	}
	s.n = int(s.w.Samples())
}

// toDisk moves the audio so far into a new file; if that fails the
// utterance stays in memory.
func (s *pcmSpool) toDisk() {
	path := filepath.Join(s.dir, "utterance-"+strconv.FormatInt(spoolSeq.Add(1), 10)+".wav")
	w, err := audio.CreateWAV(path, engine.SampleRate, audio.WAVFloat32)
	if err == nil {
		if err = w.Write(s.mem); err != nil {
			w.Abort()
		}
	}
	if err != nil {
		s.err, s.dir = err, ""
		return
	}
	s.w, s.mem, s.n = w, nil, int(w.Samples())
}

// Len is the number of samples kept so far.
func (s *pcmSpool) Len() int { return s.n }

// Truncate keeps only the first n samples (what was heard, on a cancel).
func (s *pcmSpool) Truncate(n int) {
	if n >= s.n {
		return
	}
	if s.w == nil {
		s.mem = s.mem[:max(n, 0)]
		s.n = len(s.mem)
		return
	}
	if err := s.w.Truncate(int64(max(n, 0))); err != nil && s.err == nil {
		s.err = err
	}
	s.n = int(s.w.Samples())
}

// finish puts the audio into u: PCM in memory, or the closed file. The
// error says the file failed on the way (u holds what reached it) or
// could not be started (u holds everything in memory).
func (s *pcmSpool) finish(u *Utterance) error {
	if s.w == nil {
		u.PCM, u.file, u.samples = s.mem, "", len(s.mem)
		if s.err != nil {
			return fmt.Errorf("the history keeps this utterance in memory: %w", s.err)
		}
		return nil
	}
	err := s.w.Close()
	u.PCM, u.file, u.samples = nil, s.w.Path(), int(s.w.Samples())
	if s.err != nil && !errors.Is(err, s.err) { // Close repeats a failed write's error
		err = errors.Join(s.err, err)
	}
	if err != nil {
		return fmt.Errorf("the history keeps only the first %.0f s of this utterance: %w",
			float64(u.samples)/engine.SampleRate, err)
	}
	return nil
}

// discard drops the audio (nothing worth keeping).
func (s *pcmSpool) discard() {
	if s.w != nil {
		s.w.Abort()
	}
	s.mem = nil
}

// readSpooled calls f with the samples of a WAV file written by pcmSpool,
// a second at a time (f may keep nothing: the slice is reused). n is how
// many samples the history recorded; the file must hold them.
func readSpooled(path string, n int, f func([]float32) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("the audio of this utterance is gone from the history folder: %w", err)
	}
	defer fh.Close()
	off, err := wavDataOffset(fh)
	if err != nil {
		return fmt.Errorf("history file %s: %w", path, err)
	}
	if _, err := fh.Seek(off, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, 4*engine.SampleRate)
	pcm := make([]float32, engine.SampleRate)
	for n > 0 {
		k := min(n, len(pcm))
		if _, err := io.ReadFull(fh, buf[:4*k]); err != nil {
			return fmt.Errorf("history file %s ends early: %w", path, err)
		}
		for i := range k {
			pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		if err := f(pcm[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// wavDataOffset finds where the samples of a mono float32 WAV (RIFF or
// RF64) start.
func wavDataOffset(r io.ReadSeeker) (int64, error) {
	var h [12]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, fmt.Errorf("not a WAV file: %w", err)
	}
	if id := string(h[:4]); id != "RIFF" && id != "RF64" || string(h[8:12]) != "WAVE" {
		return 0, errors.New("not a WAV file")
	}
	off := int64(12)
	float := false
	for {
		var c [8]byte
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return 0, errors.New("no audio data in the WAV file")
		}
		size := int64(binary.LittleEndian.Uint32(c[4:]))
		switch string(c[:4]) {
		case "data":
			if !float {
				return 0, errors.New("the WAV file is not mono 32-bit float")
			}
			return off + 8, nil
		case "fmt ":
			var f [16]byte
			if size < 16 {
				return 0, errors.New("bad WAV format chunk")
			}
			if _, err := io.ReadFull(r, f[:]); err != nil {
				return 0, err
			}
			le := binary.LittleEndian
			float = le.Uint16(f[0:]) == 3 && le.Uint16(f[2:]) == 1 && le.Uint16(f[14:]) == 32
			if _, err := r.Seek(off+8+size+size%2, io.SeekStart); err != nil {
				return 0, err
			}
		default:
			if _, err := r.Seek(size+size%2, io.SeekCurrent); err != nil {
				return 0, err
			}
		}
		off += 8 + size + size%2
	}
}
