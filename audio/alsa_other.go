//go:build !linux || android

package audio

// quietALSA is a no-op where ALSA does not exist.
func quietALSA() {}
