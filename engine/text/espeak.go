package text

/*
#cgo LDFLAGS: -lespeak-ng
#include <stdlib.h>
#include <string.h>
#include <espeak-ng/speak_lib.h>

// textPad is slack of zeros after the text, for espeak's look-ahead.
enum { textPad = 64 };

// stackGuard is stack reserved above espeak's frames. espeak-ng 1.51 can scan
// a word past the end of its own stack buffer until it meets a space
// (utf8_in in a loop, seen for the word "años" in es). Under Python the
// caller's deep stack holds a space soon enough; a cgo call runs near the
// top of its thread's stack, where the scan ran off into unmapped memory
// (SIGSEGV, found by the -race concurrency test). The guard is filled with
// alternating spaces and NULs so such scans, whether they stop at a space or
// at a NUL, end inside it.
enum { stackGuard = 16 << 10 };

// zs_text_to_phonemes runs espeak_TextToPhonemes over a whole UTF-8 text, one
// clause per call, and returns the non-empty results joined by single spaces
// in a malloc'd string (NULL when out of memory). The text is copied into a
// zero-padded buffer that the text pointer walks through, so the buffer
// stays alive for the whole loop. A NUL in the text ends it there, as it
// does for phonemizer's ctypes call.
static char *zs_text_to_phonemes(_GoString_ text, int phonememode) {
	volatile unsigned long long guard[stackGuard / 8];
	for (size_t i = 0; i < stackGuard / 8; i++) guard[i] = 0x0020002000200020ULL; // " \0" repeated
	size_t tn = _GoStringLen(text);
	char *buf = calloc(tn + textPad, 1);
	if (buf == NULL) return NULL;
	memcpy(buf, _GoStringPtr(text), tn);
	size_t cap = 64, len = 0;
	char *out = malloc(cap);
	if (out == NULL) { free(buf); return NULL; }
	out[0] = 0;
	const void *p = buf;
	while (p != NULL) {
		const char *r = espeak_TextToPhonemes(&p, espeakCHARS_UTF8, phonememode);
		if (r == NULL || r[0] == 0) continue;
		size_t n = strlen(r);
		size_t need = len + (len > 0) + n + 1;
		if (need > cap) {
			while (cap < need) cap *= 2;
			char *grown = realloc(out, cap);
			if (grown == NULL) { free(out); free(buf); return NULL; }
			out = grown;
		}
		if (len > 0) out[len++] = ' ';
		memcpy(out + len, r, n + 1);
		len += n;
	}
	free(buf);
	guard[0] = 0; // keep the guard alive across the loop
	return out;
}

*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// phonemeMode is phonemizer's espeak_TextToPhonemes mode: IPA (bit 1) with
// '_' as phone separator in bits 8–23 (FACTS §3).
const phonemeMode = '_'<<8 | 0x02

// espeakLib owns the process's single libespeak-ng instance. The library
// keeps global state and is not thread-safe, so every call into it, voice
// selection included, happens under mu.
var espeakLib struct {
	mu      sync.Mutex
	once    sync.Once
	initErr error
	version string
	dataDir string
	voices  map[string]string // language → voice identifier ("en-us" → "gmw/en-US")
	current string            // identifier of the selected voice
}

// ErrEspeak wraps failures of the espeak-ng library itself.
var ErrEspeak = errors.New("text: espeak-ng")

// initEspeak starts the library once; callers hold espeakLib.mu.
func initEspeak() error {
	l := &espeakLib
	l.once.Do(func() {
		if rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, 0); rate < 0 {
			l.initErr = fmt.Errorf("%w: espeak_Initialize failed (%d): is espeak-ng-data installed?", ErrEspeak, int(rate))
			return
		}
		var path *C.char
		l.version = C.GoString(C.espeak_Info(&path))
		l.dataDir = C.GoString(path)
		// A voice's language is the first entry of its languages list (a
		// priority byte, then a NUL-terminated name); the first voice in
		// list order wins, as in phonemizer.
		l.voices = map[string]string{}
		list := C.espeak_ListVoices(nil) // NULL-terminated array, owned by espeak
		for i := uintptr(0); list != nil; i++ {
			v := *(**C.espeak_VOICE)(unsafe.Add(unsafe.Pointer(list), i*unsafe.Sizeof(*list)))
			if v == nil {
				break
			}
			if v.languages == nil || *v.languages == 0 {
				continue
			}
			lang := C.GoString((*C.char)(unsafe.Add(unsafe.Pointer(v.languages), 1)))
			if _, dup := l.voices[lang]; !dup {
				l.voices[lang] = C.GoString(v.identifier)
			}
		}
	})
	return l.initErr
}

// EspeakVersion reports the linked espeak-ng's version and data directory, as
// espeak_Info gives them ("1.51", "/usr/lib/x86_64-linux-gnu/espeak-ng-data").
// The golden phonemes are exact for Debian 12's 1.51+dfsg-10+deb12u2 only.
func EspeakVersion() (version, dataDir string, err error) {
	l := &espeakLib
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := initEspeak(); err != nil {
		return "", "", err
	}
	return l.version, l.dataDir, nil
}

// espeakVoice returns the voice identifier espeak lists for a language.
func espeakVoice(language string) (string, error) {
	l := &espeakLib
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := initEspeak(); err != nil {
		return "", err
	}
	id, ok := l.voices[language]
	if !ok {
		return "", fmt.Errorf("%w: no voice for language %q in %s", ErrEspeak, language, l.dataDir)
	}
	return id, nil
}

// espeakPhonemes phonemizes each word chunk with the voice for language and
// returns espeak's raw output per chunk (clauses joined by one space). The
// whole batch runs under the library lock, so a voice switch by another
// goroutine cannot interleave.
func espeakPhonemes(language string, chunks []string) ([]string, error) {
	l := &espeakLib
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := initEspeak(); err != nil {
		return nil, err
	}
	id, ok := l.voices[language]
	if !ok {
		return nil, fmt.Errorf("%w: no voice for language %q in %s", ErrEspeak, language, l.dataDir)
	}
	if l.current != id {
		cid := C.CString(id)
		rc := C.espeak_SetVoiceByName(cid)
		C.free(unsafe.Pointer(cid))
		if rc != C.EE_OK {
			l.current = ""
			return nil, fmt.Errorf("%w: espeak_SetVoiceByName(%q) = %d", ErrEspeak, id, int(rc))
		}
		l.current = id
	}
	out := make([]string, len(chunks))
	for i, c := range chunks {
		r := C.zs_text_to_phonemes(c, phonemeMode)
		if r == nil {
			return nil, fmt.Errorf("%w: out of memory", ErrEspeak)
		}
		out[i] = C.GoString(r)
		C.free(unsafe.Pointer(r))
	}
	return out, nil
}
