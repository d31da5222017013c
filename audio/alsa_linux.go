//go:build linux && !android

package audio

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

// alsaQuiet swallows libasound's diagnostics. Without it, probing a machine
// with no sound card prints ~30 "ALSA lib confmisc.c: cannot find card '0'"
// lines on stderr; the failure still reaches the caller as an error.
static void alsaQuiet(const char *file, int line, const char *function, int err, const char *fmt, ...) {}

// silenceALSA installs alsaQuiet as libasound's error handler if libasound
// can be loaded (miniaudio loads the same library with dlopen, so the
// handler applies to it). Returns 0 when libasound is absent.
static int silenceALSA(void) {
	void *h = dlopen("libasound.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) h = dlopen("libasound.so", RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) return 0;
	typedef int (*setter)(void *);
	setter set = (setter)dlsym(h, "snd_lib_error_set_handler");
	if (set == NULL) return 0;
	set((void *)alsaQuiet);
	return 1; // the handle stays open for the life of the process
}
*/
import "C"

import "sync"

var alsaOnce sync.Once

// quietALSA silences libasound's stderr diagnostics once per process.
func quietALSA() { alsaOnce.Do(func() { C.silenceALSA() }) }
