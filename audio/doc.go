// Package audio moves synthesized speech from the engine to the listener and
// to disk, and converts sample rates.
//
// The pieces, one per file:
//
//   - Ring (ring.go): a single-producer single-consumer lock-free buffer of
//     float32 samples between the engine (producer) and the sound card
//     callback (consumer).
//   - Player (player.go, devices.go, backend.go): plays a Ring on an output
//     device through miniaudio (github.com/gen2brain/malgo) at 44.1 kHz
//     mono float32, with pre-roll, underrun counting and first-sound times.
//   - WAVWriter (wav.go, its header in wav_header.go): streams samples to a
//     WAV file whose header is valid after every write, so a cancelled,
//     interrupted or failed run still leaves a playable file; past 4 GiB the
//     file becomes RF64 in place.
//   - Resampler (resample.go): torchaudio.functional.resample with its
//     defaults, reproduced to float32 rounding, for speaker clips and audio
//     prefixes; internal/conformance.Resample checks it against the
//     golden pack for `zonos conformance`. ResampleStream
//     (resample_stream.go) gives the same output for audio arriving in
//     pieces, for the encoders of audio/encode.
//
// Real-time contract: the device callback never blocks, allocates or takes a
// lock of ours; everything it shares with other goroutines is an atomic.
package audio

// SampleRate is the rate of Zonos' DAC output and of all playback and
// recording in this package: 44.1 kHz (ZONOS.md, DAC section).
const SampleRate = 44100
