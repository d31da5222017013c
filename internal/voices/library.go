// Package voices is the named voice library the CLI (`zonos voice`, `say
// --voice`) and the app share: each voice is a speaker embedding with
// where it came from, one JSON file per voice under the XDG data
// directory. It needs no model: embedding a clip is the caller's job
// (engine/speaker), so listing and speaking with a saved voice never load
// the speaker model.
//
// Names are compared ignoring case (Unicode case folding); a file that
// cannot be read as a voice is reported with its file name and never
// stops the others from loading.
package voices

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// EmbeddingSize is the length of a voice's embedding: the 128 outputs of
// the speaker model's LDA, what Zonos' speaker conditioner takes.
const EmbeddingSize = 128

// Voice is one saved voice.
type Voice struct {
	Name      string    `json:"name"`
	Embedding []float32 `json:"embedding"`
	// ClipSHA256 is the SHA-256 (hex) of the clip file the embedding was
	// made from, so a voice can be traced to its recording; for a clip
	// recorded in the app, of its samples (float32, little-endian). Empty
	// for a voice imported from a saved vector.
	ClipSHA256 string `json:"clip_sha256,omitempty"`
	// ClipSeconds is how much of the clip the speaker model heard.
	ClipSeconds float64 `json:"clip_seconds"`
	// SpeakerModel is the speaker model's hash (engine/speaker Model.ID,
	// over both checkpoint files): an embedding means something only to
	// the model that made it. Empty when it is not known.
	SpeakerModel string    `json:"speaker_model,omitempty"`
	Created      time.Time `json:"created"`
}

// Library is a folder of voice files.
type Library struct {
	Dir string
}

// Open is the user's library: $XDG_DATA_HOME/zonos-stream/voices, else
// ~/.local/share/zonos-stream/voices. The folder is made by the first Add.
func Open() (*Library, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) { // the XDG spec ignores a relative path
		return &Library{Dir: filepath.Join(d, "zonos-stream", "voices")}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("voice library: %w (set XDG_DATA_HOME or HOME)", err)
	}
	return &Library{Dir: filepath.Join(home, ".local", "share", "zonos-stream", "voices")}, nil
}

// ErrNotFound is matched (errors.Is) by what Get and Remove return for a
// name the library does not hold.
var ErrNotFound = errors.New("no saved voice by that name")

// ErrExists is matched by what Add returns for a name already taken.
var ErrExists = errors.New("a voice by that name exists")

type notFoundError struct{ name string }

func (e notFoundError) Error() string { return fmt.Sprintf("no saved voice is named %q", e.name) }
func (e notFoundError) Is(t error) bool {
	return t == ErrNotFound
}

type existsError struct{ name, existing string }

func (e existsError) Error() string {
	if e.existing != "" && e.existing != e.name {
		return fmt.Sprintf("a voice named %q already exists (names are compared ignoring case)", e.existing)
	}
	return fmt.Sprintf("a voice named %q already exists", e.name)
}
func (e existsError) Is(t error) bool { return t == ErrExists }

// Damaged is a file in the library that is not a readable voice.
type Damaged struct {
	File string // the file's name in the library folder
	Err  error
}

func (d *Damaged) Error() string {
	return fmt.Sprintf("voice file %s is damaged: %v", d.File, d.Err)
}

func (d *Damaged) Unwrap() error { return d.Err }

// File is where the voice of that name is kept (it may not exist).
func (l *Library) File(name string) string {
	return filepath.Join(l.Dir, key(name)+".json")
}

// Add saves v. A voice of the same name (ignoring case) is replaced only
// when replace is set; else Add fails with ErrExists and the library is
// unchanged. The file is written beside its place and moved there in one
// step, so a reader never sees half a voice and a failed write loses no
// voice; it is readable by the user only, since an embedding identifies a
// person's voice.
func (l *Library) Add(v Voice, replace bool) error {
	data, err := encode(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("voice library: %w", err)
	}
	final := l.File(v.Name)
	tmp, err := os.CreateTemp(l.Dir, ".tmp-*") // a leading dot: never a voice's name
	if err != nil {
		return fmt.Errorf("voice library: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a link or a failure; gone after a rename
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("voice library: writing %s: %w", final, err)
	}
	if replace {
		if err := os.Rename(tmp.Name(), final); err != nil {
			return fmt.Errorf("voice library: %w", err)
		}
		return nil
	}
	// A hard link fails when the name is taken, so two programs adding
	// one name at once cannot both win.
	err = os.Link(tmp.Name(), final)
	if errors.Is(err, fs.ErrExist) {
		return l.exists(v.Name)
	}
	if err != nil { // a file system without hard links: check, then move
		if _, serr := os.Lstat(final); serr == nil {
			return l.exists(v.Name)
		}
		if err := os.Rename(tmp.Name(), final); err != nil {
			return fmt.Errorf("voice library: %w", err)
		}
	}
	return nil
}

func (l *Library) exists(name string) error {
	e := existsError{name: name}
	if old, err := l.Get(name); err == nil {
		e.existing = old.Name
	}
	return e
}

// Get reads the voice named name (ignoring case). A missing voice is
// ErrNotFound; a file that is not a voice is a *Damaged naming it.
func (l *Library) Get(name string) (Voice, error) {
	if err := CheckName(name); err != nil {
		return Voice{}, err
	}
	p := l.File(name)
	v, err := readVoice(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Voice{}, notFoundError{name}
	}
	return v, err
}

// List reads every voice, sorted by name, and the files that could not be
// read as one (the library's temporary files and files not ending in
// .json are not voices and are passed over). An error is the folder
// itself failing to read; a library never written to is empty.
func (l *Library) List() ([]Voice, []*Damaged, error) {
	ents, err := os.ReadDir(l.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("voice library: %w", err)
	}
	var vs []Voice
	var bad []*Damaged
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		v, err := readVoice(filepath.Join(l.Dir, n))
		if err != nil {
			var d *Damaged
			if !errors.As(err, &d) {
				d = &Damaged{File: n, Err: err}
			}
			bad = append(bad, d)
			continue
		}
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return key(vs[i].Name) < key(vs[j].Name) })
	return vs, bad, nil
}

// Names lists the voices' names, sorted (for messages that offer them).
func Names(vs []Voice) []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return names
}

// Remove deletes the voice named name (ignoring case), readable or not.
func (l *Library) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	err := os.Remove(l.File(name))
	if errors.Is(err, fs.ErrNotExist) {
		return notFoundError{name}
	}
	if err != nil {
		return fmt.Errorf("voice library: %w", err)
	}
	return nil
}

// readVoice reads one voice file: a file that cannot be opened is that
// error (fs.ErrNotExist when missing), one that does not hold a voice a
// *Damaged. The file must hold the voice its name says.
func readVoice(p string) (Voice, error) {
	f, err := os.Open(p)
	if err != nil {
		return Voice{}, fmt.Errorf("voice library: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err == nil {
		var v Voice
		if v, err = decode(data); err == nil {
			if want := key(v.Name) + ".json"; want != filepath.Base(p) {
				err = fmt.Errorf("it holds the voice %q, whose file is %s: rename it to that", v.Name, want)
			} else {
				return v, nil
			}
		}
	}
	return Voice{}, &Damaged{File: filepath.Base(p), Err: err}
}
