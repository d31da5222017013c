package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"zonostream/audio"
	"zonostream/engine"
)

// Pauser is an output that can hold playback without losing a sample
// (audio.Player's Pause): the reading view's Space.
type Pauser interface {
	Pause()
	Resume()
	Paused() bool
}

// readRequest builds the engine request for reading text (a document from
// some sentence on) with the job's settings: one long-form stream that
// keeps no codes, so memory stays flat however long it runs. lead is how
// many leading bytes the request dropped (offsets shift by it).
func (s *Speaker) readRequest(job Job, text string) (engine.Request, []string, int, error) {
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n\f\v\u00a0\u2028\u2029"))
	st := job.Settings
	st.Text = text
	req, notices, err := BuildRequest(st, Voice{Speaker: job.SpeakerEmbedding}, s.rng.Uint64)
	if err != nil {
		return req, nil, 0, err
	}
	req.MaxSeconds = s.MaxSeconds
	req.DiscardCodes = true
	return req, notices, lead, nil
}

// Read speaks text, the document from byte offset base on, on the output
// and returns the track the reading view follows it by. The utterance
// goes to the history like any other (on disk when long); Stop ends it,
// keeping what was heard. A paused output is resumed when it ends.
func (s *Speaker) Read(job Job, text string, base int) (*readTrack, error) {
	out := s.Output()
	if out == nil {
		return nil, errors.New("there is no sound output to read aloud on: choose one under Sound output in the Compose tab, or use Export to write the reading to a WAV file")
	}
	req, notices, lead, err := s.readRequest(job, text)
	if err != nil {
		return nil, err
	}
	ctx, finish, err := s.start()
	if err != nil {
		return nil, err
	}
	tr := newReadTrack(base + lead)
	s.Wave.Reset()
	go func() {
		for _, n := range notices {
			s.OnNotice(n)
		}
		u := s.run(ctx, job, req, notices, tr)
		if p, ok := out.(Pauser); ok {
			p.Resume()
		}
		finish()
		if s.OnEnd != nil {
			s.OnEnd(u)
		}
	}()
	return tr, nil
}

// Export renders text to a 32-bit float WAV file at path without playing
// it, as fast as the engine generates. progress is called (on the
// Speaker's goroutine) with the bytes of text done as each part starts;
// end with the samples written and the outcome. The file is written
// beside path and renamed over it at the end (audio.CreateWAV): on Stop or
// a failure it is removed, and what was at path is left as it was. An
// error wrapping errExportIncomplete says the file did reach path.
func (s *Speaker) Export(job Job, text, path string, progress func(done int), end func(samples int64, err error)) error {
	req, notices, lead, err := s.readRequest(job, text)
	if err != nil {
		return err
	}
	before, _ := os.Stat(path) // nil: nothing there
	w, err := audio.CreateWAV(path, engine.SampleRate, audio.WAVFloat32)
	if err != nil {
		return err
	}
	ctx, finish, err := s.start()
	if err != nil {
		w.Abort()
		return err
	}
	go func() {
		for _, n := range notices {
			s.OnNotice(n)
		}
		err := s.export(ctx, job, req, w, func(done int) { progress(lead + done) })
		if err != nil {
			w.Abort()
		} else {
			err = finishExport(path, before, w.Close)
		}
		phase := PhaseDone
		switch {
		case errors.Is(err, context.Canceled):
			phase = PhaseStopped
		case err != nil:
			phase = PhaseFailed
		}
		s.Meters.SetPhase(phase)
		finish()
		end(w.Samples(), err)
		if s.OnEnd != nil {
			s.OnEnd(nil)
		}
	}()
	return nil
}

// errExportIncomplete marks an export whose file reached its path though
// finishing it failed.
var errExportIncomplete = errors.New("the file was written but may be incomplete")

// finishExport closes an export's file with close (WAVWriter.Close). Close
// renames the file into place even when updating its header or syncing it
// to disk failed, and returns that error; the error then wraps
// errExportIncomplete, since the file is at path. before is what was at
// path when the export began (nil: nothing), to tell the new file from one
// a failed rename left there.
func finishExport(path string, before os.FileInfo, close func() error) error {
	err := close()
	if err == nil {
		return nil
	}
	if after, serr := os.Stat(path); serr == nil && (before == nil || !os.SameFile(before, after)) {
		return fmt.Errorf("%w: %w", errExportIncomplete, err)
	}
	return err
}

// export is one export's stream into w.
func (s *Speaker) export(ctx context.Context, job Job, req engine.Request, w *audio.WAVWriter, progress func(int)) error {
	eng, req, err := s.setUp(ctx, job, req, s.OnNotice)
	if err != nil {
		return err
	}
	s.Meters.Begin(time.Now())
	stream, err := eng.Synthesize(ctx, req)
	if err != nil {
		return err
	}
	var final engine.Event
	var werr error
	for ev := range stream.Events() {
		s.Meters.Observe(ev)
		switch ev.Kind {
		case engine.PartStart:
			progress(ev.Part.Start)
		case engine.Audio:
			if werr == nil {
				if werr = w.Write(ev.PCM); werr != nil {
					stream.Cancel()
				}
			}
		case engine.Notice:
			s.OnNotice(ev.Message)
		case engine.Done, engine.Failed:
			final = ev
		}
	}
	if werr != nil {
		return werr
	}
	if final.Kind == engine.Failed {
		return final.Err
	}
	progress(len(req.Text))
	return nil
}
