package weights

import (
	"errors"
	"io"
	"testing"
)

// TestRetryErrorAdvice: Error gives the command line's advice and Advise
// another front end's, each with " to resume" only when the next try
// continues the download; the cause stays reachable with errors.Is.
func TestRetryErrorAdvice(t *testing.T) {
	cut := &RetryError{Err: errors.Join(errors.New("model.safetensors: transfer cut"), io.ErrUnexpectedEOF), Attempts: 5, Resume: true}
	changed := &RetryError{Err: errors.New("config.json: the file changed on the server while downloading (10 bytes, was 12)")}
	for _, c := range []struct {
		e              *RetryError
		action, advice string
	}{
		{cut, pullAgain, "model.safetensors: transfer cut\nunexpected EOF (gave up after 5 attempts; run the pull again to resume)"},
		{cut, "press Retry", "model.safetensors: transfer cut\nunexpected EOF (gave up after 5 attempts; press Retry to resume)"},
		{changed, pullAgain, "config.json: the file changed on the server while downloading (10 bytes, was 12); run the pull again"},
		{changed, "press Retry", "config.json: the file changed on the server while downloading (10 bytes, was 12); press Retry"},
	} {
		if got := c.e.Advise(c.action); got != c.advice {
			t.Errorf("Advise(%q) = %q, want %q", c.action, got, c.advice)
		}
	}
	if cut.Error() != cut.Advise(pullAgain) || changed.Error() != changed.Advise(pullAgain) {
		t.Errorf("Error words the command line's advice: %q, %q", cut.Error(), changed.Error())
	}
	if !errors.Is(cut, io.ErrUnexpectedEOF) {
		t.Error("the cause is not reachable through the RetryError")
	}
}
