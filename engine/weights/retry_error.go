package weights

import "fmt"

// RetryError is a download that stopped where pulling again gets past it:
// the server could not be reached, kept failing or cut the transfer, the file
// changed on the server while it downloaded, or its bytes did not match
// the hub's hash and were discarded. Pull and Fetch return it as a file's
// error, never wrapped, so a front end can test for it (errors.As) and
// offer its own way of trying again: Error says the command line's (run
// the pull again), Advise words another's.
type RetryError struct {
	// Err is what stopped the download, worded without advice; the token
	// is redacted from it.
	Err error
	// Attempts is how many failures in a row the downloader gave up
	// after; 0 when one failure ends the pull.
	Attempts int
	// Resume: the next pull continues where this one stopped (finished
	// files and the part downloaded are kept) rather than start the file
	// over.
	Resume bool
}

// pullAgain is the command line's way of trying again.
const pullAgain = "run the pull again"

// Error words e for the command line: "model.safetensors: unexpected EOF
// (gave up after 5 attempts; run the pull again to resume)".
func (e *RetryError) Error() string { return e.Advise(pullAgain) }

// Advise words e with action, a front end's way of trying again ("run the
// pull again", "press Retry"), followed by " to resume" when the next try
// continues the download.
func (e *RetryError) Advise(action string) string {
	if e.Resume {
		action += " to resume"
	}
	if e.Attempts > 0 {
		return fmt.Sprintf("%v (gave up after %d attempts; %s)", e.Err, e.Attempts, action)
	}
	return fmt.Sprintf("%v; %s", e.Err, action)
}

func (e *RetryError) Unwrap() error { return e.Err }
