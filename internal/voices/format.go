package voices

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
)

// fileFormat and fileVersion head every voice file, so that a stray JSON
// file in the folder is not taken for a voice and a newer layout is
// refused by name rather than misread.
const (
	fileFormat  = "zonos-stream voice"
	fileVersion = 1
)

// MaxFileBytes bounds a voice file read: one holds 128 numbers and a few
// fields, about 3 KiB.
const MaxFileBytes = 64 << 10

// file is a voice file's JSON: the header, then the voice's fields.
type file struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Voice
}

// encode is v's file: indented JSON, the embedding as numbers (float32
// values print exactly in their shortest form and read back bit for bit).
func encode(v Voice) ([]byte, error) {
	if err := checkVoice(v); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(file{Format: fileFormat, Version: fileVersion, Voice: v}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// decode reads a voice file and checks everything in it: a voice that
// decodes is one the CLI and the app can speak with.
func decode(data []byte) (Voice, error) {
	if len(data) > MaxFileBytes {
		return Voice{}, fmt.Errorf("larger than %d KiB, so not a voice file", MaxFileBytes>>10)
	}
	var f file
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&f); err != nil {
		return Voice{}, fmt.Errorf("not a voice file (%v)", err)
	}
	if d.More() {
		return Voice{}, fmt.Errorf("not a voice file (data after the voice)")
	}
	switch {
	case f.Format != fileFormat:
		return Voice{}, fmt.Errorf("not a voice file (its format is %q, not %q)", f.Format, fileFormat)
	case f.Version > fileVersion:
		return Voice{}, fmt.Errorf("written by a newer Zonos Stream (voice format %d; this one reads %d)", f.Version, fileVersion)
	case f.Version != fileVersion:
		return Voice{}, fmt.Errorf("unknown voice format version %d", f.Version)
	}
	if err := checkVoice(f.Voice); err != nil {
		return Voice{}, err
	}
	return f.Voice, nil
}

// checkVoice checks what a voice file must hold beyond its name.
func checkVoice(v Voice) error {
	if err := CheckName(v.Name); err != nil {
		return err
	}
	if len(v.Embedding) != EmbeddingSize {
		return fmt.Errorf("voice %q: its embedding has %d values, want %d", v.Name, len(v.Embedding), EmbeddingSize)
	}
	for i, x := range v.Embedding {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("voice %q: embedding value %d is not a finite number", v.Name, i)
		}
	}
	if !(v.ClipSeconds >= 0) || math.IsInf(v.ClipSeconds, 0) {
		return fmt.Errorf("voice %q: clip length %v s is not a length", v.Name, v.ClipSeconds)
	}
	for _, h := range []struct{ what, hex string }{{"clip hash", v.ClipSHA256}, {"speaker model hash", v.SpeakerModel}} {
		if h.hex == "" {
			continue
		}
		if b, err := hex.DecodeString(h.hex); err != nil || len(b) != 32 {
			return fmt.Errorf("voice %q: %s %q is not a SHA-256 in hex", v.Name, h.what, h.hex)
		}
	}
	return nil
}
