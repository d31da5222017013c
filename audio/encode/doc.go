// Package encode turns synthesized speech into the byte streams of the
// speech server's response formats while it is being generated: each
// Encoder takes mono float32 samples in [−1, 1] in pieces of any size and
// writes what is encoded to an io.Writer before Write returns, so an HTTP
// body can stream audio with no more delay than one codec frame.
//
// The formats (Formats, in the order they are documented):
//
//   - wav (wav.go): 16-bit PCM WAV. The header goes out in New, with the
//     RIFF and data sizes set to 0xFFFFFFFF, the streaming convention for
//     "until end of stream" that ffmpeg, sox, browsers and libsndfile read;
//     the body is not seekable, so Close writes nothing more.
//   - pcm (pcm.go): raw signed 16-bit little-endian samples, no header.
//     OpenAI's pcm format is this at 24 kHz, and clients such as LiveKit
//     and Pipecat assume that rate: the server asks for it with
//     Options.Rate.
//   - flac (flac.go): 16-bit FLAC in frames of 4096 samples (93 ms at
//     44.1 kHz), through the pure-Go github.com/mewkiz/flac. STREAMINFO
//     says "length unknown" (0 samples, no MD5), which FLAC allows for
//     streams.
//   - opus (opus.go): Ogg Opus through libopusenc (cgo), 20 ms packets,
//     the Ogg page flushed after every Write.
//   - mp3 (mp3.go): CBR MP3 through LAME (cgo), without the Xing/LAME
//     info frame, which needs seeking back to the start, and without the
//     bit reservoir, which delays each frame until the next is encoded.
//
// Every 16-bit format quantises with audio.PCM16, as WAV files do. WAV, PCM
// and FLAC resample to Options.Rate with audio.ResampleStream, so their
// samples are exactly audio.Resample's for the whole utterance; Opus is
// always 48 kHz (libopusenc resamples) and LAME resamples MP3 itself.
//
// An Encoder is used by one goroutine at a time. The first error, of the
// codec or of the writer, ends the stream: every later Write and Close
// returns it. Write after Close is an error; Close after Close does nothing
// and returns nil. The C encoders' memory is freed by Close, and by the
// garbage collector for an encoder dropped without Close.
package encode
