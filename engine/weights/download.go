package weights

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultEndpoint is the public hub; HF_ENDPOINT overrides it.
const DefaultEndpoint = "https://huggingface.co"

// MaxDownloadBytes bounds what one file may claim to be (the largest bundle
// file, the hybrid model.safetensors, is about 3.3 GB).
const MaxDownloadBytes = 64 << 30

// Secret holds a token; it prints as [redacted] under every fmt verb that
// would print a string, so a stray %v never leaks it.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return `"[redacted]"` }

// Downloader fetches hub files into a Cache in huggingface_hub's layout.
// Files already in the cache are returned without any request. Downloads
// resume from the blob's .incomplete file (cancel the context to pause, call
// again to resume), are checked against the size and hash the hub reports,
// and are renamed into blobs/ only when they match.
type Downloader struct {
	Cache    Cache
	Endpoint string // base URL; files are at {Endpoint}/{repo}/resolve/{revision}/{file}
	Token    Secret // sent as a Bearer token to the endpoint, never to other hosts
	Revision string // branch, tag or commit; "" means main
	Offline  bool   // HF_HUB_OFFLINE: use the cache only

	Client       *http.Client  // nil: a client with connect and header timeouts
	MaxAttempts  int           // per request, for transient errors; 0 means 5
	Backoff      time.Duration // first wait between attempts, doubling up to 30s; 0 means 1s
	StallTimeout time.Duration // a transfer with no bytes for this long is retried; 0 means 60s
	Parallel     int           // files fetched at once by Pull; 0 means 2

	// Progress, when set, receives every file's state. Calls are serialized
	// (never concurrent), come from Pull's goroutines, and must return quickly.
	Progress func(Progress)

	mu sync.Mutex
}

// NewDownloader configures a Downloader from the environment as
// huggingface_hub does: HF_ENDPOINT; HF_TOKEN (else HUGGING_FACE_HUB_TOKEN,
// else the file at $HF_TOKEN_PATH or $HF_HOME/token that `huggingface-cli
// login` writes); HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) = 1/ON/YES/TRUE.
func NewDownloader(c Cache) (*Downloader, error) {
	d := &Downloader{Cache: c, Endpoint: DefaultEndpoint}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		d.Endpoint = e
	}
	if _, err := d.endpoint(); err != nil {
		return nil, err
	}
	d.Token = Secret(envToken())
	d.Offline = OfflineFromEnv()
	return d, nil
}

// OfflineFromEnv reports whether the environment forbids downloads as
// huggingface_hub reads it: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set to
// 1, ON, YES or TRUE.
func OfflineFromEnv() bool { return envTrue("HF_HUB_OFFLINE") || envTrue("TRANSFORMERS_OFFLINE") }

func envTrue(name string) bool {
	switch strings.ToUpper(strings.TrimSpace(os.Getenv(name))) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func envToken() string {
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(v)); t != "" {
			return t
		}
	}
	path := os.Getenv("HF_TOKEN_PATH")
	if path == "" {
		home, _, err := hfHome()
		if err != nil {
			return ""
		}
		path = filepath.Join(home, "token")
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// endpoint parses Endpoint; messages show it without any user:password.
func (d *Downloader) endpoint() (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(d.Endpoint, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HF_ENDPOINT %q: want an http(s) base URL such as %s", redactURL(d.Endpoint), DefaultEndpoint)
	}
	return u, nil
}

func (d *Downloader) revision() string {
	if d.Revision == "" {
		return DefaultRevision
	}
	return d.Revision
}

// fileURL is {endpoint}/{repo}/resolve/{revision}/{file}, each part escaped.
func (d *Downloader) fileURL(f RepoFile) (string, error) {
	base, err := d.endpoint()
	if err != nil {
		return "", err
	}
	segs := strings.Split(f.Name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base.String() + "/" + f.Repo + "/resolve/" + url.PathEscape(d.revision()) + "/" + strings.Join(segs, "/"), nil
}

// Phase is where a file's fetch stands.
type Phase string

const (
	PhaseCached      Phase = "cached"      // already on disk; nothing was fetched
	PhaseStarting    Phase = "starting"    // asking the server for size and hash
	PhaseWaiting     Phase = "waiting"     // another process is downloading the same file
	PhaseDownloading Phase = "downloading" // bytes are arriving
	PhaseRetrying    Phase = "retrying"    // a transient error (Err); the next attempt follows a backoff
	PhaseVerifying   Phase = "verifying"   // hashing what is on disk
	PhaseDone        Phase = "done"        // verified (or size-checked) and in place
	PhaseFailed      Phase = "failed"      // gave up; Err says why
)

// Progress is one report about one file.
type Progress struct {
	File    RepoFile
	Phase   Phase
	Bytes   int64         // bytes on disk so far, resumed ones included
	Total   int64         // the file's size; -1 when the server did not say
	Resumed int64         // bytes an earlier, interrupted download had left
	Rate    float64       // bytes per second over the last few seconds; 0 until measured
	ETA     time.Duration // -1 when unknown
	Attempt int           // 1 for the first try of the current request
	Err     error         // PhaseRetrying and PhaseFailed
	Path    string        // PhaseDone and PhaseCached: the snapshot path
}

func (d *Downloader) emit(p Progress) {
	if d.Progress == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Progress(p)
}

// PullBundle makes the variant's bundle complete in the cache and returns it.
func (d *Downloader) PullBundle(ctx context.Context, v Variant) (*Bundle, error) {
	if _, err := ParseVariant(string(v)); err != nil {
		return nil, err
	}
	entries, err := d.Pull(ctx, BundleFiles(v))
	if err != nil {
		var me *MissingError
		if errors.As(err, &me) {
			me.Variant = v
		}
		return nil, err
	}
	return newBundle(v, entries), nil
}

// Pull fetches the files that are not in the cache, up to Parallel at a time,
// and returns every file's entry in order. Files already present cost no
// request. A failed file does not stop the others; the error joins every
// failure, a *RetryError for each file that pulling again gets past.
// Offline, or when the endpoint cannot be reached, the error is a
// *MissingError listing what is missing and where it would go. On
// cancellation the partial downloads stay and the next Pull resumes them.
func (d *Downloader) Pull(ctx context.Context, files []RepoFile) ([]Entry, error) {
	entries, missing, err := d.Cache.lookupAll(files, d.revision())
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if e.Path != "" {
			d.emit(Progress{File: files[i], Phase: PhaseCached, Bytes: e.Size, Total: e.Size, ETA: 0, Path: e.Path})
		}
	}
	if len(missing) == 0 {
		return entries, nil
	}
	if d.Offline {
		return nil, &MissingError{Cache: d.Cache, Missing: missing, Reason: "HF_HUB_OFFLINE is set, so nothing was downloaded"}
	}
	if _, err := d.endpoint(); err != nil {
		return nil, err
	}
	par := d.Parallel
	if par <= 0 {
		par = 2
	}
	errs := make([]error, len(files))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.Path != "" {
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			entries[i], errs[i] = d.Fetch(ctx, files[i])
		}(i)
	}
	wg.Wait()

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("download paused (%w); partial files are kept and the next pull resumes them", err)
	}
	var failed []error
	var unreachable []MissingFile
	var netErr error
	for i, err := range errs {
		if err == nil {
			continue
		}
		if isNetworkDown(err) {
			unreachable = append(unreachable, MissingFile{files[i], d.Cache.Dest(files[i], d.revision())})
			netErr = err
			continue
		}
		failed = append(failed, err)
	}
	if len(unreachable) > 0 {
		base, _ := d.endpoint()
		me := &MissingError{Cache: d.Cache, Missing: unreachable, Reason: "cannot reach " + base.Redacted() + ": " + rootCause(netErr), Err: netErr}
		if len(failed) == 0 {
			return nil, me
		}
		failed = append(failed, me)
	}
	if len(failed) > 0 {
		return nil, errors.Join(failed...)
	}
	return entries, nil
}

// Fetch returns f from the cache, downloading it first when it is missing;
// its error is a *RetryError when pulling again gets past it.
func (d *Downloader) Fetch(ctx context.Context, f RepoFile) (Entry, error) {
	if e, ok, err := d.Cache.Lookup(f, d.revision()); err != nil || ok {
		if ok {
			d.emit(Progress{File: f, Phase: PhaseCached, Bytes: e.Size, Total: e.Size, Path: e.Path})
		}
		return e, err
	}
	if d.Offline {
		return Entry{}, &MissingError{Cache: d.Cache, Missing: []MissingFile{{f, d.Cache.Dest(f, d.revision())}}, Reason: "HF_HUB_OFFLINE is set, so nothing was downloaded"}
	}
	e, err := d.fetch(ctx, f)
	if err != nil {
		err = redactErr(err, string(d.Token))
		if errors.As(err, new(*HashMismatchError)) {
			err = &RetryError{Err: err} // the file was discarded: pulling again downloads it afresh
		}
		d.emit(Progress{File: f, Phase: PhaseFailed, Total: -1, ETA: -1, Err: err})
		return Entry{}, err
	}
	d.emit(Progress{File: f, Phase: PhaseDone, Bytes: e.Size, Total: e.Size, Path: e.Path})
	return e, nil
}

// remote is what the server said about a file.
type remote struct {
	URL          string // the resolve URL asked
	Location     string // where to GET the bytes (a CDN after a hub redirect)
	Commit       string // X-Repo-Commit; "" from servers that are not the hub
	ETag         string // normalized X-Linked-Etag or ETag
	LastModified string
	Size         int64 // -1 when unknown
	Expect       expectation
}

func (d *Downloader) fetch(ctx context.Context, f RepoFile) (Entry, error) {
	if err := f.validate(); err != nil {
		return Entry{}, err
	}
	d.emit(Progress{File: f, Phase: PhaseStarting, Total: -1, ETA: -1, Attempt: 1})
	var r remote
	err := d.retry(ctx, f, nil, 2, func() (bool, error) {
		var err error
		r, err = d.head(ctx, f)
		return false, err
	})
	if err != nil {
		return Entry{}, err
	}
	commit := r.Commit
	if commit == "" {
		commit = d.revision() // a plain mirror: the snapshot is named after the branch
	}
	if !validRevision(commit) {
		return Entry{}, fmt.Errorf("%s: the server sent an unusable X-Repo-Commit %.64q; check HF_ENDPOINT", f, commit)
	}
	repoDir := d.Cache.RepoDir(f.Repo)
	blobs := filepath.Join(repoDir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return Entry{}, fmt.Errorf("%s: %w; make %s writable or set HF_HUB_CACHE", f, err, d.Cache.Dir)
	}
	// The lock and the .incomplete are named after the ETag, as
	// huggingface_hub names them, so either program can resume the other's
	// download. Without a hub hash they are named after the URL and validator.
	key := r.ETag
	if r.Expect.Kind == hashNone {
		sum := sha256.Sum256([]byte(r.URL + "\n" + r.ETag + "\n" + r.LastModified + "\n" + strconv.FormatInt(r.Size, 10)))
		key = "zonos-" + hex.EncodeToString(sum[:20])
	}
	unlock, err := lockFile(ctx, filepath.Join(d.Cache.Dir, ".locks", filepath.Base(repoDir), key+".lock"), func() {
		d.emit(Progress{File: f, Phase: PhaseWaiting, Total: r.Size, ETA: -1})
	})
	if err != nil {
		return Entry{}, fmt.Errorf("%s: locking the download: %w", f, err)
	}
	defer unlock()

	snap := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(f.Name))
	if r.Expect.Kind != hashNone {
		// The same contents may be stored already: another revision, or a
		// download that finished while we waited for the lock.
		blob := filepath.Join(blobs, r.ETag)
		if st, err := os.Stat(blob); err == nil && st.Mode().IsRegular() && (r.Size < 0 || st.Size() == r.Size) {
			return d.place(f, r, blob, snap, commit, nil)
		}
	}

	incomplete := filepath.Join(blobs, key+".incomplete")
	if old, ok := d.Cache.readPending(f); ok && old.Incomplete != key+".incomplete" {
		os.Remove(filepath.Join(blobs, old.Incomplete)) // a part of a file the server no longer has
	}
	if r.Size > 0 {
		have, _ := fileSize(incomplete)
		if err := checkFreeSpace(blobs, r.Size-have); err != nil {
			return Entry{}, fmt.Errorf("%s: %w", f, err)
		}
	}
	if err := d.Cache.writePending(f, pending{Incomplete: key + ".incomplete", Size: r.Size}); err != nil {
		return Entry{}, fmt.Errorf("%s: %w; make %s writable or set HF_HUB_CACHE", f, err, d.Cache.Dir)
	}
	sha, resumed, err := d.download(ctx, f, r, incomplete)
	if errors.As(err, new(*HashMismatchError)) {
		os.Remove(incomplete)
		d.Cache.clearPending(f)
	}
	if err != nil {
		return Entry{}, err
	}
	got, err := d.check(ctx, f, r, incomplete, sha)
	if err != nil && resumed > 0 && errors.As(err, new(*HashMismatchError)) {
		// The kept part may come from an older file: start once from zero.
		os.Remove(incomplete)
		d.emit(Progress{File: f, Phase: PhaseRetrying, Total: r.Size, ETA: -1, Err: err})
		if sha, _, err = d.download(ctx, f, r, incomplete); err != nil {
			return Entry{}, err
		}
		got, err = d.check(ctx, f, r, incomplete, sha)
	}
	if err != nil {
		os.Remove(incomplete)
		d.Cache.clearPending(f)
		return Entry{}, err
	}
	blobName := r.ETag
	if r.Expect.Kind == hashNone {
		blobName = sha // content-addressed, as the hub's sha256 names would be
	}
	blob := filepath.Join(blobs, blobName)
	if err := os.Chmod(incomplete, 0o644); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", f, err)
	}
	if err := os.Rename(incomplete, blob); err != nil {
		return Entry{}, fmt.Errorf("%s: moving the download into %s: %w", f, blobs, err)
	}
	syncDir(blobs)
	d.Cache.clearPending(f)
	return d.place(f, r, blob, snap, commit, &got)
}

// check compares a finished download with what the server published.
func (d *Downloader) check(ctx context.Context, f RepoFile, r remote, path, sha string) (record, error) {
	size, err := fileSize(path)
	if err != nil {
		return record{}, fmt.Errorf("%s: %w", f, err)
	}
	if r.Size >= 0 && size != r.Size {
		return record{}, &HashMismatchError{File: f, Want: fmt.Sprintf("%d bytes", r.Size), Got: fmt.Sprintf("%d bytes", size)}
	}
	rec := record{SHA256: sha, Expected: r.Expect.String(), State: Unverified, Source: redactURL(r.URL)}
	switch r.Expect.Kind {
	case hashSHA256:
		if sha != r.Expect.Hex {
			return record{}, &HashMismatchError{File: f, Want: "sha256 " + r.Expect.Hex, Got: "sha256 " + sha}
		}
		rec.State = Verified
	case hashGitSHA1:
		d.emit(Progress{File: f, Phase: PhaseVerifying, Bytes: size, Total: size, ETA: -1})
		_, git, _, err := hashFile(ctx, path, true, nil)
		if err != nil {
			return record{}, fmt.Errorf("%s: %w", f, err)
		}
		if git != r.Expect.Hex {
			return record{}, &HashMismatchError{File: f, Want: "git-sha1 " + r.Expect.Hex, Got: "git-sha1 " + git}
		}
		rec.State = Verified
	}
	return rec, nil
}

// place links the snapshot to the blob, moves refs/<revision> to the commit,
// and records the check (nil: the blob was already there).
func (d *Downloader) place(f RepoFile, r remote, blob, snap, commit string, rec *record) (Entry, error) {
	if err := linkSnapshot(blob, snap); err != nil {
		return Entry{}, fmt.Errorf("%s: linking %s: %w", f, snap, err)
	}
	if commit != d.revision() {
		ref := filepath.Join(d.Cache.RepoDir(f.Repo), "refs", d.revision())
		if old, _ := os.ReadFile(ref); string(old) != commit {
			if err := writeFileAtomic(ref, []byte(commit)); err != nil {
				return Entry{}, fmt.Errorf("%s: writing %s: %w", f, ref, err)
			}
		}
	}
	st, err := os.Stat(snap)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", f, err)
	}
	e := Entry{RepoFile: f, Path: snap, Revision: commit, Size: st.Size()}
	if t, err := os.Readlink(snap); err == nil {
		e.Blob = filepath.Clean(filepath.Join(filepath.Dir(snap), t))
	}
	if rec != nil {
		if err := d.Cache.writeRecord(e, *rec); err != nil {
			return Entry{}, fmt.Errorf("%s: recording its hash check: %w", f, err)
		}
	}
	return e, nil
}

// linkSnapshot points snap at blob with a relative symlink, as
// huggingface_hub does; where symlinks fail it hard-links, else copies.
func linkSnapshot(blob, snap string) error {
	dir := filepath.Dir(snap)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, blob)
	if err != nil {
		return err
	}
	tmp := snap + ".zonos-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		if err := os.Link(blob, tmp); err != nil {
			if err := copyFile(blob, tmp); err != nil {
				os.Remove(tmp)
				return err
			}
		}
	}
	if err := os.Rename(tmp, snap); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}

// HashMismatchError: the downloaded bytes are not what the server published.
// The download is discarded; Fetch returns it inside a *RetryError, since
// pulling again downloads the file afresh.
type HashMismatchError struct {
	File      RepoFile
	Want, Got string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("%s: downloaded file does not match the hub: want %s, got %s; the download was discarded; if this repeats, the server (HF_ENDPOINT) or a proxy is corrupting files", e.File, e.Want, e.Got)
}

// StatusError is an HTTP failure the server will repeat if asked again.
type StatusError struct {
	File     RepoFile
	URL      string // without query
	Code     int
	HubCode  string // X-Error-Code (RepoNotFound, GatedRepo, EntryNotFound, …)
	HubMsg   string // X-Error-Message
	HasToken bool
}

func (e *StatusError) Error() string {
	var fix string
	switch {
	case e.Code == http.StatusUnauthorized && !e.HasToken:
		fix = "the repository needs a Hugging Face token (or does not exist): set HF_TOKEN to a read token from https://huggingface.co/settings/tokens"
	case e.Code == http.StatusUnauthorized:
		fix = "HF_TOKEN was rejected: check that the token is valid and can read this repository"
	case e.Code == http.StatusForbidden || e.HubCode == "GatedRepo":
		fix = "access denied: if the repository is gated, accept its terms on its hub page with the account HF_TOKEN belongs to"
	case e.Code == http.StatusNotFound && e.HubCode == "RevisionNotFound":
		fix = "the revision does not exist in this repository"
	case e.Code == http.StatusNotFound:
		fix = "not found: check HF_ENDPOINT; a mirror must serve files as /{org}/{name}/resolve/main/{file}"
	default:
		fix = "the server refused the request; check HF_ENDPOINT and try again later"
	}
	s := fmt.Sprintf("%s: %s answered %d %s", e.File, e.URL, e.Code, http.StatusText(e.Code))
	if e.HubMsg != "" {
		s += " (" + e.HubMsg + ")"
	}
	return s + "; " + fix
}

func (d *Downloader) statusError(f RepoFile, u string, resp *http.Response) error {
	code := resp.StatusCode
	if code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500 {
		return &transientError{fmt.Errorf("%s: %s answered %d %s", f, redactURL(u), code, http.StatusText(code)), retryAfter(resp)}
	}
	msg := resp.Header.Get("X-Error-Message")
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return &StatusError{File: f, URL: redactURL(u), Code: code, HubCode: resp.Header.Get("X-Error-Code"), HubMsg: msg, HasToken: d.Token != ""}
}

// transientError is worth retrying; wait overrides the backoff (Retry-After).
type transientError struct {
	err  error
	wait time.Duration
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, time.Minute)
	}
	return 0
}

// isTransient says whether trying again may help: 5xx, 429, timeouts,
// refused or reset connections, cut transfers. Certificate errors and
// cancellation are final.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var te *transientError
	if errors.As(err, &te) {
		return true
	}
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.Is(err, errStalled)
}

// isNetworkDown says whether err means the endpoint could not be reached at
// all (no route, no DNS, refused), as opposed to a server that answered.
func isNetworkDown(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}

func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		if _, ok := u.(interface{ Unwrap() []error }); ok {
			return u.Error()
		}
		err = u
	}
}

// retry runs op until it succeeds, fails for good, or MaxAttempts transient
// failures in a row; op reports whether it made progress, which resets the
// count (a long download cut many times still finishes). When netDown > 0,
// that many attempts that could not reach the server at all are enough to
// call the network down.
func (d *Downloader) retry(ctx context.Context, f RepoFile, p *Progress, netDown int, op func() (progressed bool, err error)) error {
	max := d.MaxAttempts
	if max <= 0 {
		max = 5
	}
	base := d.Backoff
	if base <= 0 {
		base = time.Second
	}
	for attempt := 1; ; attempt++ {
		progressed, err := op()
		if err == nil || !isTransient(err) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if progressed {
			attempt = 1
		}
		if attempt >= max || netDown > 0 && attempt >= netDown && isNetworkDown(err) {
			return &RetryError{Err: redactErr(err, string(d.Token)), Attempts: attempt, Resume: true}
		}
		wait := base << (attempt - 1)
		var te *transientError
		if errors.As(err, &te) && te.wait > 0 {
			wait = te.wait
		}
		wait = min(wait, 30*time.Second)
		rp := Progress{File: f, Phase: PhaseRetrying, Total: -1, ETA: -1, Attempt: attempt + 1, Err: redactErr(err, string(d.Token))}
		if p != nil {
			rp.Bytes, rp.Total, rp.Resumed = p.Bytes, p.Total, p.Resumed
		}
		d.emit(rp)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (d *Downloader) client() *http.Client {
	if d.Client != nil {
		return d.Client
	}
	return defaultClient
}

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	ForceAttemptHTTP2:     true,
	TLSHandshakeTimeout:   30 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
	IdleConnTimeout:       90 * time.Second,
	MaxIdleConns:          16,
}}

// do sends req. Redirects are followed by hand so that Authorization goes
// only to the host it was meant for: it is dropped when a redirect leaves
// that scheme://host:port, as requests (huggingface_hub's client) drops it.
// With follow false a cross-host redirect is returned, not followed.
func (d *Downloader) do(req *http.Request, auth bool, follow bool) (*http.Response, error) {
	c := *d.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	origin := req.URL.Scheme + "://" + req.URL.Host
	for hops := 0; ; hops++ {
		req.Header.Set("User-Agent", "zonos-stream (weights; go)")
		req.Header.Set("Accept-Encoding", "identity") // byte offsets must be the file's
		if auth && d.Token != "" && req.URL.Scheme+"://"+req.URL.Host == origin {
			req.Header.Set("Authorization", "Bearer "+string(d.Token))
		} else {
			req.Header.Del("Authorization")
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
			return resp, nil
		}
		loc, err := resp.Location()
		if err != nil {
			return resp, nil // a 3xx without Location: the caller reports it
		}
		sameHost := loc.Scheme+"://"+loc.Host == origin
		if !follow && !sameHost {
			return resp, nil
		}
		resp.Body.Close()
		if hops >= 10 {
			return nil, fmt.Errorf("%s: more than 10 redirects; check HF_ENDPOINT", redactURL(req.URL.String()))
		}
		next := req.Clone(req.Context())
		next.URL = loc
		next.Host = ""
		req = next
	}
}

// head asks for the file's metadata like huggingface_hub's
// get_hf_file_metadata: HEAD without following redirects to other hosts;
// the hub's redirect to its CDN carries X-Repo-Commit, X-Linked-Etag (the
// LFS sha256) and X-Linked-Size. A redirect without those (a mirror that
// forwards to storage) is followed to learn the size from the target.
func (d *Downloader) head(ctx context.Context, f RepoFile) (remote, error) {
	u, err := d.fileURL(f)
	if err != nil {
		return remote{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return remote{}, fmt.Errorf("%s: %w", f, err)
	}
	resp, err := d.do(req, true, false)
	if err != nil {
		return remote{}, fmt.Errorf("%s: asking %s: %w", f, redactURL(u), bareURLError(err))
	}
	resp.Body.Close()
	r := remote{URL: u, Location: resp.Request.URL.String(), Size: -1}
	h := resp.Header
	sizeFromLength := resp.StatusCode == http.StatusOK // a redirect's own length is not the file's
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		loc, err := resp.Location()
		if err != nil {
			return remote{}, fmt.Errorf("%s: %s answered %d without a Location; check HF_ENDPOINT", f, redactURL(u), resp.StatusCode)
		}
		r.Location = loc.String()
		if h.Get("X-Linked-Etag") == "" && h.Get("X-Linked-Size") == "" {
			// Not the hub: follow to where the bytes are, without the token.
			req2, err := http.NewRequestWithContext(ctx, http.MethodHead, r.Location, nil)
			if err != nil {
				return remote{}, fmt.Errorf("%s: redirect to %s: %w", f, redactURL(r.Location), err)
			}
			resp2, err := d.do(req2, false, true)
			if err != nil {
				return remote{}, fmt.Errorf("%s: asking %s: %w", f, redactURL(r.Location), bareURLError(err))
			}
			resp2.Body.Close()
			if resp2.StatusCode != http.StatusOK {
				return remote{}, d.statusError(f, r.Location, resp2)
			}
			r.Location = resp2.Request.URL.String()
			h = resp2.Header.Clone()
			sizeFromLength = true
			if c := resp.Header.Get("X-Repo-Commit"); c != "" {
				h.Set("X-Repo-Commit", c)
			}
		}
	case resp.StatusCode != http.StatusOK:
		return remote{}, d.statusError(f, u, resp)
	}
	r.Commit = strings.TrimSpace(h.Get("X-Repo-Commit"))
	r.ETag = normalizeETag(h.Get("X-Linked-Etag"))
	if r.ETag == "" {
		r.ETag = normalizeETag(h.Get("ETag"))
	}
	r.LastModified = h.Get("Last-Modified")
	sizeHdr := h.Get("X-Linked-Size")
	if sizeHdr == "" && sizeFromLength {
		sizeHdr = h.Get("Content-Length")
	}
	if sizeHdr != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(sizeHdr), 10, 64)
		if err != nil || n < 0 {
			return remote{}, fmt.Errorf("%s: %s sent a bad size %q; check HF_ENDPOINT", f, redactURL(u), sizeHdr)
		}
		r.Size = n
	}
	if r.Size > MaxDownloadBytes {
		return remote{}, fmt.Errorf("%s: %s claims %s, over the %s limit for one model file; check HF_ENDPOINT", f, redactURL(u), humanBytes(r.Size), humanBytes(MaxDownloadBytes))
	}
	r.Expect = expectationFromETag(r.ETag, r.Commit != "")
	if r.Expect.Kind != hashNone {
		r.ETag = r.Expect.Hex
	}
	return r, nil
}

var errStalled = errors.New("no data arrived for too long")

// download fills path (resuming what is there) until it holds the whole
// file, retrying transient failures, and returns its sha256 and how many
// bytes were resumed.
func (d *Downloader) download(ctx context.Context, f RepoFile, r remote, path string) (sha string, resumed int64, err error) {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w; make %s writable or set HF_HUB_CACHE", f, err, filepath.Dir(path))
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", f, err)
	}
	off := st.Size()
	h := sha256.New()
	if r.Size >= 0 && off > r.Size {
		off = 0 // longer than the file: not a part of it
	}
	if off > 0 {
		d.emit(Progress{File: f, Phase: PhaseVerifying, Bytes: off, Total: r.Size, Resumed: off, ETA: -1})
		n, err := io.Copy(h, io.NewSectionReader(&ctxReaderAt{ctx, file}, 0, off))
		if err != nil {
			return "", 0, fmt.Errorf("%s: reading the partial download: %w", f, err)
		}
		if n != off {
			off = 0
		}
	}
	if off == 0 {
		h.Reset()
		if err := file.Truncate(0); err != nil {
			return "", 0, fmt.Errorf("%s: %w", f, err)
		}
	}
	resumed = off
	t := &transfer{d: d, f: f, r: r, file: file, h: h, off: off, resumed: resumed, meter: &rateMeter{}}
	err = d.retry(ctx, f, &t.last, 0, func() (bool, error) {
		before := t.off
		done, err := t.get(ctx)
		if err == nil && !done {
			err = &transientError{fmt.Errorf("%s: the connection closed after %s of %s", f, humanBytes(t.off), humanBytes(r.Size)), 0}
		}
		return t.off > before, err
	})
	if err != nil {
		return "", 0, err
	}
	if err := file.Sync(); err != nil {
		return "", 0, fmt.Errorf("%s: %w", f, err)
	}
	return hex.EncodeToString(h.Sum(nil)), resumed, nil
}

type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c *ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// transfer is one file's download state across attempts.
type transfer struct {
	d       *Downloader
	f       RepoFile
	r       remote
	file    *os.File
	h       hash.Hash
	off     int64 // bytes in file, all hashed into h
	resumed int64
	meter   *rateMeter
	last    Progress
	emitted time.Time
}

func (t *transfer) restart() error {
	t.h.Reset()
	t.off, t.resumed = 0, 0
	t.meter = &rateMeter{}
	return t.file.Truncate(0)
}

// get makes one GET from t.off and appends what arrives; done is true when
// the file is complete (or, with no known size, the server ended it).
func (t *transfer) get(ctx context.Context) (done bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := t.stall()
	watchdog := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer watchdog.Stop()

	req, err := http.NewRequestWithContext(actx, http.MethodGet, t.r.Location, nil)
	if err != nil {
		return false, fmt.Errorf("%s: %w", t.f, err)
	}
	if t.off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(t.off, 10)+"-")
		// Without a hub hash, make sure the kept part is of the same file.
		if t.r.Expect.Kind == hashNone && t.r.Location == t.r.URL {
			if t.r.ETag != "" {
				req.Header.Set("If-Range", `"`+t.r.ETag+`"`)
			} else if t.r.LastModified != "" {
				req.Header.Set("If-Range", t.r.LastModified)
			}
		}
	}
	// The token goes to the endpoint only: not to a CDN the hub pointed at.
	auth := sameOrigin(t.r.Location, t.r.URL)
	t.progress(PhaseDownloading, true)
	resp, err := t.d.do(req, auth, true)
	if err != nil {
		return false, t.cause(actx, fmt.Errorf("%s: downloading from %s: %w", t.f, redactURL(t.r.Location), bareURLError(err)))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != t.off || (total >= 0 && t.r.Size >= 0 && total != t.r.Size) {
			if err := t.restart(); err != nil {
				return false, err
			}
			return false, &transientError{fmt.Errorf("%s: the server answered the resume with an unexpected range %q; starting over", t.f, resp.Header.Get("Content-Range")), 0}
		}
	case http.StatusOK:
		if resp.ContentLength >= 0 && t.r.Size >= 0 && resp.ContentLength != t.r.Size {
			return false, &RetryError{Err: fmt.Errorf("%s: the file changed on the server while downloading (%d bytes, was %d)", t.f, resp.ContentLength, t.r.Size)}
		}
		if t.off > 0 { // the server ignored Range or the file changed
			if err := t.restart(); err != nil {
				return false, err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if t.r.Size >= 0 && t.off == t.r.Size {
			return true, nil
		}
		if err := t.restart(); err != nil {
			return false, err
		}
		return false, &transientError{fmt.Errorf("%s: the server refused to resume at byte %d; starting over", t.f, t.off), 0}
	default:
		return false, t.d.statusError(t.f, t.r.Location, resp)
	}

	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			watchdog.Reset(stall)
			if t.r.Size >= 0 && t.off+int64(n) > t.r.Size {
				return false, &HashMismatchError{File: t.f, Want: fmt.Sprintf("%d bytes", t.r.Size), Got: "more"}
			}
			if _, err := t.file.WriteAt(buf[:n], t.off); err != nil {
				return false, fmt.Errorf("%s: writing %s: %w (is the disk full?)", t.f, t.file.Name(), err)
			}
			t.h.Write(buf[:n])
			t.off += int64(n)
			t.progress(PhaseDownloading, false)
		}
		if rerr == io.EOF {
			t.progress(PhaseDownloading, true)
			return t.r.Size < 0 || t.off == t.r.Size, nil
		}
		if rerr != nil {
			return false, t.cause(actx, fmt.Errorf("%s: transfer from %s cut at byte %d: %w", t.f, redactURL(t.r.Location), t.off, rerr))
		}
	}
}

func (t *transfer) stall() time.Duration {
	if t.d.StallTimeout > 0 {
		return t.d.StallTimeout
	}
	return 60 * time.Second
}

// cause turns the watchdog's cancellation into a retryable stall.
func (t *transfer) cause(actx context.Context, err error) error {
	if errors.Is(context.Cause(actx), errStalled) {
		return &transientError{fmt.Errorf("%s: %w (%s)", t.f, errStalled, t.stall()), 0}
	}
	return err
}

// progress reports at most every 100 ms, and always when force is set.
func (t *transfer) progress(ph Phase, force bool) {
	now := time.Now()
	t.meter.add(now, t.off)
	if !force && now.Sub(t.emitted) < 100*time.Millisecond {
		return
	}
	t.emitted = now
	p := Progress{File: t.f, Phase: ph, Bytes: t.off, Total: t.r.Size, Resumed: t.resumed, Rate: t.meter.rate(), ETA: -1, Attempt: 1}
	if p.Rate > 0 && p.Total >= 0 {
		p.ETA = time.Duration(float64(p.Total-p.Bytes) / p.Rate * float64(time.Second))
	}
	t.last = p
	t.d.emit(p)
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*": -1).
func parseContentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
			return 0, 0, false
		}
	}
	return start, total, true
}

// rateMeter measures bytes per second over the last few seconds.
type rateMeter struct {
	t []time.Time
	b []int64
}

const rateWindow = 5 * time.Second

func (m *rateMeter) add(now time.Time, bytes int64) {
	if n := len(m.t); n > 0 && now.Sub(m.t[n-1]) < 200*time.Millisecond {
		m.b[n-1] = bytes // coalesce: keep the window's samples few
		return
	}
	m.t = append(m.t, now)
	m.b = append(m.b, bytes)
	i := 0
	for i < len(m.t)-2 && now.Sub(m.t[i+1]) > rateWindow {
		i++
	}
	m.t, m.b = m.t[i:], m.b[i:]
}

func (m *rateMeter) rate() float64 {
	n := len(m.t)
	if n < 2 {
		return 0
	}
	dt := m.t[n-1].Sub(m.t[0]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(m.b[n-1]-m.b[0]) / dt
}

// bareURLError strips *url.Error's "Get <url>:" prefix, whose URL may carry
// a CDN signature; messages name the URL themselves, redacted.
func bareURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL drops user:password and the query (CDN signatures) from a URL
// shown in a message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
	return u.String()
}

// redactErr makes sure the token never appears in an error's text.
func redactErr(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{err, token}
}

type redactedError struct {
	err   error
	token string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.token, "[HF_TOKEN]")
}
func (e *redactedError) Unwrap() error { return e.err }
