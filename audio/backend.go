package audio

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gen2brain/malgo"
)

// nullBackend selects miniaudio's null backend: a device that consumes
// samples on a timer with no sound card (CI, headless benchmarks).
//
// malgo v0.11.24's Go enumeration skips miniaudio's ma_backend_custom, so
// malgo.BackendNull is really the custom backend (context init fails with
// "No backend") and the real null backend is the next value
// (docs/PLATFORM.md; TestNullBackendQuirk pins both facts, so a malgo
// upgrade that fixes the enumeration fails loudly instead of silently).
const nullBackend = malgo.Backend(malgo.BackendNull + 1)

// realBackends are the backends that can reach a sound card, in miniaudio's
// default priority order; malgo's values up to BackendWebaudio match
// miniaudio's. Leaving out the null backend means "no device" is an error
// instead of silent playback into nothing.
var realBackends = []malgo.Backend{
	malgo.BackendWasapi, malgo.BackendDsound, malgo.BackendWinmm,
	malgo.BackendCoreaudio, malgo.BackendSndio, malgo.BackendAudio4,
	malgo.BackendOss, malgo.BackendPulseaudio, malgo.BackendAlsa,
	malgo.BackendJack, malgo.BackendAaudio, malgo.BackendOpensl,
	malgo.BackendWebaudio,
}

// audioContext is an initialized miniaudio context plus the failure
// messages miniaudio logged, to make errors say more than "Failed to open
// backend device".
type audioContext struct {
	ctx *malgo.AllocatedContext
	log *failureLog
}

// newAudioContext initializes miniaudio with the real backends, or only the
// null backend.
func newAudioContext(null bool) (*audioContext, error) {
	backends := realBackends
	if null {
		backends = []malgo.Backend{nullBackend}
	}
	if !null {
		quietALSA()
	}
	log := &failureLog{}
	ctx, err := malgo.InitContext(backends, malgo.ContextConfig{}, log.add)
	if err != nil {
		if null {
			return nil, fmt.Errorf("audio: miniaudio null backend: %w", err)
		}
		return nil, fmt.Errorf("audio: no sound system found (%w%s); install PulseAudio, PipeWire or ALSA (libasound2), or write a WAV file instead", err, log.last())
	}
	return &audioContext{ctx: ctx, log: log}, nil
}

func (c *audioContext) close() {
	c.ctx.Uninit()
	c.ctx.Free()
}

// failureLog keeps the last few miniaudio log lines that report a failure.
// miniaudio calls it from the caller's goroutine during init and rarely from
// its own threads afterwards, never from the data callback.
type failureLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *failureLog) add(msg string) {
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	low := strings.ToLower(msg)
	if !strings.Contains(low, "fail") && !strings.Contains(low, "error") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 8 {
		copy(l.lines, l.lines[1:])
		l.lines = l.lines[:7]
	}
	l.lines = append(l.lines, msg)
}

// last returns "; <last failure line>" or "".
func (l *failureLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return "; " + l.lines[len(l.lines)-1]
}
