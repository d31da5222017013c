package weights

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CheckState says how far a cached file's contents are known to be right.
type CheckState string

const (
	// Verified: the contents hashed to what the hub published (sha256 for
	// LFS files, git-sha1 for the others), checked by a download or by
	// Cache.Verify.
	Verified CheckState = "verified"
	// Unverified: the server published no hash (a plain static mirror), so
	// only the size was checked.
	Unverified CheckState = "unverified"
	// NotChecked: found in the cache (e.g. downloaded by huggingface_hub,
	// which does not hash) with its hub hash as the blob name, not hashed yet.
	NotChecked CheckState = "not checked"
	// Mismatch: hashed, and the contents differ from the hub's hash.
	Mismatch CheckState = "MISMATCH"
)

// Verification is a file's CheckState with the detail behind it.
type Verification struct {
	State  CheckState
	Detail string // e.g. "sha256 matches the hub", "server gave no hash; size only"
	SHA256 string // hex, when the contents were hashed
}

// hashKind is what an ETag can be checked against.
type hashKind int

const (
	hashNone    hashKind = iota
	hashSHA256           // LFS files: the ETag is the sha256 of the contents
	hashGitSHA1          // regular files on the hub: the git blob id
)

// expectation is a hash the contents must match.
type expectation struct {
	Kind hashKind
	Hex  string
}

func (x expectation) String() string {
	switch x.Kind {
	case hashSHA256:
		return "sha256:" + x.Hex
	case hashGitSHA1:
		return "git-sha1:" + x.Hex
	}
	return ""
}

func parseExpectationString(s string) expectation {
	k, v, _ := strings.Cut(s, ":")
	switch {
	case k == "sha256" && isHex(v, 64):
		return expectation{hashSHA256, v}
	case k == "git-sha1" && isHex(v, 40):
		return expectation{hashGitSHA1, v}
	}
	return expectation{}
}

// normalizeETag strips the weak marker and quotes: W/"abc" -> abc.
func normalizeETag(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	return strings.Trim(s, `"`)
}

// expectationFromETag reads a hash from a normalized ETag: 64 hex digits are
// a sha256 (LFS); 40 are a git-sha1, trusted only from the hub itself (fromHub:
// the response carried X-Repo-Commit), since other servers' 40-digit ETags
// can mean anything.
func expectationFromETag(etag string, fromHub bool) expectation {
	e := strings.ToLower(etag)
	switch {
	case isHex(e, 64):
		return expectation{hashSHA256, e}
	case fromHub && isHex(e, 40):
		return expectation{hashGitSHA1, e}
	}
	return expectation{}
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// gitBlobHasher hashes like `git hash-object`: sha1("blob <size>\x00" + data).
func gitBlobHasher(size int64) hash.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

// hashFile computes the sha256 (and the git-sha1 when git is set) of path,
// reporting progress and stopping on ctx.
func hashFile(ctx context.Context, path string, git bool, progress func(done, total int64)) (sha, gitSHA string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", "", 0, err
	}
	size = st.Size()
	hs := sha256.New()
	var hg hash.Hash
	w := io.Writer(hs)
	if git {
		hg = gitBlobHasher(size)
		w = io.MultiWriter(hs, hg)
	}
	buf := make([]byte, 1<<20)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return "", "", 0, err
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			done += int64(n)
			if progress != nil {
				progress(done, size)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", "", 0, rerr
		}
	}
	if done != size {
		return "", "", 0, fmt.Errorf("%s changed size while being hashed (%d, then %d bytes)", path, size, done)
	}
	sha = hex.EncodeToString(hs.Sum(nil))
	if hg != nil {
		gitSHA = hex.EncodeToString(hg.Sum(nil))
	}
	return sha, gitSHA, size, nil
}

// record is what zonos keeps beside the cache about one blob: the outcome
// of the last hash check, valid while the blob's size and mtime are unchanged.
// It lives in models--ORG--NAME/.zonos/, which huggingface_hub ignores.
type record struct {
	File     string     `json:"file"`
	Size     int64      `json:"size"`
	MTimeNS  int64      `json:"mtime_ns"`
	SHA256   string     `json:"sha256"`
	Expected string     `json:"expected,omitempty"` // "sha256:<hex>" or "git-sha1:<hex>"; "" when the server gave none
	State    CheckState `json:"state"`
	Source   string     `json:"source,omitempty"` // the URL it came from, without query
}

// recordKey names an entry's record: its blob, else its snapshot path.
func recordKey(e Entry) string {
	if e.Blob != "" {
		return filepath.Base(e.Blob)
	}
	return "snapshot-" + e.Revision + "-" + url.PathEscape(e.Name)
}

func (c Cache) recordPath(repo, key string) string {
	return filepath.Join(c.RepoDir(repo), ".zonos", "checks", key+".json")
}

func (c Cache) readRecord(e Entry) (record, bool) {
	b, err := os.ReadFile(c.recordPath(e.Repo, recordKey(e)))
	if err != nil || len(b) > 1<<16 {
		return record{}, false
	}
	var r record
	if json.Unmarshal(b, &r) != nil {
		return record{}, false
	}
	st, err := os.Stat(e.Path)
	if err != nil || st.Size() != r.Size || st.ModTime().UnixNano() != r.MTimeNS {
		return record{}, false
	}
	return r, true
}

func (c Cache) writeRecord(e Entry, r record) error {
	st, err := os.Stat(e.Path)
	if err != nil {
		return err
	}
	r.File, r.Size, r.MTimeNS = e.Name, st.Size(), st.ModTime().UnixNano()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.recordPath(e.Repo, recordKey(e)), b)
}

// expected is the hash an entry should match: from its record, else from
// the blob name huggingface_hub gives it (the hub's ETag).
func (c Cache) expected(e Entry) expectation {
	if r, ok := c.readRecord(e); ok && r.Expected != "" {
		return parseExpectationString(r.Expected)
	}
	if e.Blob != "" {
		return expectationFromETag(filepath.Base(e.Blob), true)
	}
	return expectation{}
}

// verification reads an entry's state from disk without hashing.
func (c Cache) verification(e Entry) Verification {
	if r, ok := c.readRecord(e); ok {
		return Verification{State: r.State, Detail: recordDetail(r), SHA256: r.SHA256}
	}
	switch x := c.expected(e); x.Kind {
	case hashSHA256:
		return Verification{State: NotChecked, Detail: "blob named by the hub's sha256; 'zonos models --verify' hashes it"}
	case hashGitSHA1:
		return Verification{State: NotChecked, Detail: "blob named by the hub's git-sha1; 'zonos models --verify' hashes it"}
	}
	return Verification{State: Unverified, Detail: "no hub hash known for this file"}
}

func recordDetail(r record) string {
	x := parseExpectationString(r.Expected)
	switch r.State {
	case Verified:
		if x.Kind == hashGitSHA1 {
			return "git-sha1 matches the hub"
		}
		return "sha256 matches the hub"
	case Mismatch:
		return fmt.Sprintf("contents hash to sha256 %s, expected %s; delete the file and run 'zonos pull'", short(r.SHA256), x)
	}
	return "server gave no hash; size only (sha256 " + short(r.SHA256) + ")"
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

// Verify hashes a cached file and compares it with the hub's hash (from the
// download record, or the blob name huggingface_hub uses), records the
// outcome for Status, and returns it. A mismatch is a Verification with
// State Mismatch, not an error; errors are I/O and cancellation.
func (c Cache) Verify(ctx context.Context, e Entry, progress func(done, total int64)) (Verification, error) {
	x := c.expected(e)
	sha, git, _, err := hashFile(ctx, e.Path, x.Kind == hashGitSHA1, progress)
	if err != nil {
		return Verification{}, fmt.Errorf("verify %s: %w", e.RepoFile, err)
	}
	r := record{SHA256: sha, Expected: x.String(), State: Unverified}
	if old, ok := c.readRecord(e); ok {
		r.Source = old.Source
	}
	switch {
	case x.Kind == hashSHA256 && sha == x.Hex, x.Kind == hashGitSHA1 && git == x.Hex:
		r.State = Verified
	case x.Kind != hashNone:
		r.State = Mismatch
	}
	if err := c.writeRecord(e, r); err != nil {
		return Verification{}, fmt.Errorf("verify %s: recording the result: %w; check that %s is writable", e.RepoFile, err, c.RepoDir(e.Repo))
	}
	return Verification{State: r.State, Detail: recordDetail(r), SHA256: sha}, nil
}

// pending remembers which .incomplete file holds a download of a file, so
// Status can show how much is waiting to resume.
type pending struct {
	Incomplete string `json:"incomplete"`
	Size       int64  `json:"size"` // -1 when the server did not say
}

func (c Cache) pendingPath(f RepoFile) string {
	return filepath.Join(c.RepoDir(f.Repo), ".zonos", "pending", url.PathEscape(f.Name)+".json")
}

func (c Cache) readPending(f RepoFile) (pending, bool) {
	b, err := os.ReadFile(c.pendingPath(f))
	if err != nil || len(b) > 1<<12 {
		return pending{}, false
	}
	var p pending
	if json.Unmarshal(b, &p) != nil || !validSegment(p.Incomplete) || !strings.HasSuffix(p.Incomplete, ".incomplete") {
		return pending{}, false
	}
	return p, true
}

func (c Cache) writePending(f RepoFile, p pending) error {
	b, _ := json.Marshal(p)
	return writeFileAtomic(c.pendingPath(f), b)
}

func (c Cache) clearPending(f RepoFile) { os.Remove(c.pendingPath(f)) }

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// writeFileAtomic writes b to a temporary file beside path and renames it
// into place, so readers see the old contents or the new, never a mix.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// humanBytes formats n as "3.2 GB" (decimal units, as the hub shows sizes).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
