package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"zonostream/engine/compute"
	"zonostream/internal/voices"
)

func init() {
	register("voice", "the named voice library: add a voice from a clip, list, remove; speak with 'say --voice NAME'", runVoice)
}

const voiceUsage = `usage: zonos voice add NAME CLIP [--replace] [--speaker-dir DIR] [--backend B]
       zonos voice list [--json]
       zonos voice rm NAME

Named voices, shared with the app, kept in $XDG_DATA_HOME/zonos-stream/voices
(else ~/.local/share/zonos-stream/voices). add embeds CLIP (WAV, FLAC, MP3,
Ogg Vorbis; its first 30 s) with the speaker model, as 'say --speaker' does,
or stores a vector from 'zonos embed -o' as it is; 'zonos say --voice NAME'
then speaks in that voice without the speaker model. Names ignore case.`

func runVoice(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, voiceUsage)
		return 2
	}
	switch args[0] {
	case "add":
		return runVoiceAdd(args[1:])
	case "list", "ls":
		return runVoiceList(args[1:])
	case "rm", "remove":
		return runVoiceRemove(args[1:])
	case "-h", "--help", "help":
		fmt.Println(voiceUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "zonos voice: unknown subcommand %q\n%s\n", args[0], voiceUsage)
	return 2
}

// parseInterspersed parses fs from args with flags before, between or
// after the positional arguments ("voice add NAME CLIP --replace"), which
// it returns; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func runVoiceAdd(args []string) int {
	fs := flag.NewFlagSet("voice add", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos voice add NAME CLIP [flags]\n\nSaves CLIP's voice in the library as NAME.\n\nflags:")
		fs.PrintDefaults()
	}
	replace := fs.Bool("replace", false, "overwrite a saved voice of the same name")
	speakerDir := fs.String("speaker-dir", "", "folder with the speaker model's two .pt files (default: the model cache)")
	bf := addBackendFlags(fs, "auto")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		fs.Usage()
		return 2
	}
	name, clipPath := pos[0], pos[1]
	if err := voices.CheckName(name); err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice add:", err)
		return 2
	}
	lib, err := voices.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice add:", err)
		return 1
	}
	// Refuse a taken name before the clip is embedded (a minute on the CPU).
	if !*replace {
		var d *voices.Damaged
		switch old, err := lib.Get(name); {
		case err == nil:
			fmt.Fprintf(os.Stderr, "zonos voice add: a voice named %q already exists (saved %s); pass --replace to overwrite it\n", old.Name, old.Created.Local().Format("2006-01-02 15:04"))
			return 1
		case errors.As(err, &d):
			fmt.Fprintf(os.Stderr, "zonos voice add: %v; pass --replace to overwrite it\n", err)
			return 1
		case !errors.Is(err, voices.ErrNotFound):
			fmt.Fprintln(os.Stderr, "zonos voice add:", err)
			return 1
		}
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	v, err := readVoice(clipPath, *speakerDir, logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice add:", err)
		return 1
	}
	saved := voices.Voice{Name: name, Created: time.Now().UTC().Truncate(time.Second)}
	if v.clip != nil {
		if saved.ClipSHA256, err = voices.FileSHA256(clipPath); err != nil {
			fmt.Fprintln(os.Stderr, "zonos voice add:", err)
			return 1
		}
		saved.ClipSeconds = v.clip.Seconds()
	}
	var b compute.Backend // only a clip is embedded; a saved vector is stored as it is
	if v.clip != nil {
		if b, err = openBackend(*bf); err != nil {
			fmt.Fprintln(os.Stderr, "zonos voice add:", err)
			return 2
		}
		defer b.Close()
	}
	sig := catchStopSignals()
	defer sig.stop()
	if saved.Embedding, err = v.embed(sig.ctx, b, logf); err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice add:", err)
		if c := sig.exitCode(); c != 0 {
			return c
		}
		return 1
	}
	saved.SpeakerModel = v.model
	if err := lib.Add(saved, *replace); err != nil {
		if errors.Is(err, voices.ErrExists) {
			fmt.Fprintf(os.Stderr, "zonos voice add: %v; pass --replace to overwrite it\n", err)
		} else {
			fmt.Fprintln(os.Stderr, "zonos voice add:", err)
		}
		return 1
	}
	fmt.Printf("saved voice %q in %s\n", name, lib.File(name))
	return 0
}

// voiceListing is one voice in `zonos voice list --json`: the metadata and
// its file, not the 128 numbers.
type voiceListing struct {
	Name         string    `json:"name"`
	File         string    `json:"file"`
	ClipSHA256   string    `json:"clip_sha256,omitempty"`
	ClipSeconds  float64   `json:"clip_seconds"`
	SpeakerModel string    `json:"speaker_model,omitempty"`
	Created      time.Time `json:"created"`
}

type damagedListing struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

func runVoiceList(args []string) int {
	fs := flag.NewFlagSet("voice list", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos voice list [--json]\n\nLists the saved voices; a damaged voice file is named on standard error and makes the exit status 1.\n\nflags:")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	lib, err := voices.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice list:", err)
		return 1
	}
	vs, bad, err := lib.List()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice list:", err)
		return 1
	}
	if *asJSON {
		out := struct {
			Dir     string           `json:"dir"`
			Voices  []voiceListing   `json:"voices"`
			Damaged []damagedListing `json:"damaged"`
		}{Dir: lib.Dir, Voices: []voiceListing{}, Damaged: []damagedListing{}}
		for _, v := range vs {
			out.Voices = append(out.Voices, voiceListing{v.Name, lib.File(v.Name), v.ClipSHA256, v.ClipSeconds, v.SpeakerModel, v.Created})
		}
		for _, d := range bad {
			out.Damaged = append(out.Damaged, damagedListing{d.File, d.Err.Error()})
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		printVoices(os.Stdout, lib, vs)
	}
	for _, d := range bad {
		fmt.Fprintf(os.Stderr, "zonos voice list: %v (in %s: delete it, or save the voice again with 'zonos voice add --replace')\n", d, lib.Dir)
	}
	if len(bad) > 0 {
		return 1
	}
	return 0
}

// printVoices is the table `zonos voice list` prints.
func printVoices(w io.Writer, lib *voices.Library, vs []voices.Voice) {
	if len(vs) == 0 {
		fmt.Fprintf(w, "no saved voices in %s; add one with 'zonos voice add NAME clip.wav'\n", lib.Dir)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCLIP\tSPEAKER MODEL\tSAVED")
	for _, v := range vs {
		clip, model := "saved vector", "unknown"
		if v.ClipSHA256 != "" {
			clip = fmt.Sprintf("%.1f s, sha256 %s", v.ClipSeconds, v.ClipSHA256[:12])
		}
		if v.SpeakerModel != "" {
			model = v.SpeakerModel[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, clip, model, v.Created.Local().Format("2006-01-02 15:04"))
	}
	tw.Flush()
	fmt.Fprintf(w, "(%s)\n", lib.Dir)
}

func runVoiceRemove(args []string) int {
	fs := flag.NewFlagSet("voice rm", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: zonos voice rm NAME\n\nDeletes a saved voice (its file, readable or not).")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	if err := voices.CheckName(name); err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice rm:", err)
		return 2
	}
	lib, err := voices.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos voice rm:", err)
		return 1
	}
	if err := lib.Remove(name); err != nil {
		if errors.Is(err, voices.ErrNotFound) {
			err = withKnownVoices(lib, err)
		}
		fmt.Fprintln(os.Stderr, "zonos voice rm:", err)
		return 1
	}
	fmt.Printf("removed voice %q\n", name)
	return 0
}

// libraryVoice is `say --voice NAME`: the saved embedding, used as is (no
// speaker model needed).
func libraryVoice(name string, logf func(string, ...any)) (*voice, error) {
	lib, err := voices.Open()
	if err != nil {
		return nil, err
	}
	v, err := lib.Get(name)
	if errors.Is(err, voices.ErrNotFound) {
		return nil, withKnownVoices(lib, err)
	}
	if err != nil {
		return nil, err
	}
	logf("voice %q from the library (saved %s)", v.Name, v.Created.Local().Format("2006-01-02 15:04"))
	return &voice{vector: v.Embedding, path: lib.File(name)}, nil
}

// withKnownVoices adds to a not-found error the names that would work.
func withKnownVoices(lib *voices.Library, err error) error {
	vs, _, lerr := lib.List()
	switch {
	case lerr != nil:
		return err
	case len(vs) == 0:
		return fmt.Errorf("%w: the library (%s) is empty; add one with 'zonos voice add NAME clip.wav'", err, lib.Dir)
	}
	quoted := make([]string, len(vs))
	for i, v := range vs {
		quoted[i] = fmt.Sprintf("%q", v.Name) // names may hold commas
	}
	return fmt.Errorf("%w; saved voices: %s", err, strings.Join(quoted, ", "))
}
