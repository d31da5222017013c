package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadNpyVector: a --speaker .npy file is user input; arbitrary bytes
// never panic, and an accepted file gives exactly 128 values.
func FuzzReadNpyVector(f *testing.F) {
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (128,), }"
	for len(hdr)%16 != 15 {
		hdr += " "
	}
	good := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)+1), 0)
	good = append(append(good, hdr+"\n"...), make([]byte, 512)...)
	f.Add(good)
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{}"))
	f.Add([]byte("\x93NUMPY\x01"))
	p := filepath.Join(f.TempDir(), "v.npy")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Skip(err)
		}
		v, err := readNpyVector(p)
		if err == nil && len(v) != 128 {
			t.Fatalf("%d values accepted", len(v))
		}
	})
}
