package weights

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The Hugging Face cache layout, as huggingface_hub writes it (file_download.py,
// "The new cache file layout"):
//
//	<cache>/models--ORG--NAME/
//	    blobs/<etag>                      file contents, named by sha256 (LFS) or git-sha1
//	    snapshots/<commit>/<file>         relative symlink to ../../blobs/<etag>
//	    refs/<revision>                   the commit a branch or tag pointed at
//	<cache>/.locks/models--ORG--NAME/<etag>.lock
//
// Files found here are used as they are, so anyone who already ran Zonos in
// Python downloads nothing.

// DefaultRevision is the branch resolved when none is given.
const DefaultRevision = "main"

// Cache is a Hugging Face hub cache directory.
type Cache struct {
	Dir string
	// From says where Dir came from ("HF_HUB_CACHE", "HF_HOME", "default"),
	// so messages can tell the user which variable moves it.
	From string
}

// DefaultCache finds the cache directory exactly as huggingface_hub does
// (constants.py): $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
func DefaultCache() (Cache, error) {
	for _, v := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := os.Getenv(v); d != "" {
			p, err := expandHome(d)
			return Cache{Dir: p, From: v}, err
		}
	}
	home, from, err := hfHome()
	if err != nil {
		return Cache{}, err
	}
	return Cache{Dir: filepath.Join(home, "hub"), From: from}, nil
}

// hfHome is $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface; from names the variable that decided it.
func hfHome() (dir, from string, err error) {
	if d := os.Getenv("HF_HOME"); d != "" {
		p, err := expandHome(d)
		return p, "HF_HOME", err
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		p, err := expandHome(d)
		return filepath.Join(p, "huggingface"), "XDG_CACHE_HOME", err
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("hugging face cache: no home directory (%v); set HF_HOME or HF_HUB_CACHE to a writable directory", err)
	}
	return filepath.Join(h, ".cache", "huggingface"), "default", nil
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("hugging face cache: cannot expand %q: %v; use an absolute path", p, err)
	}
	return filepath.Join(h, strings.TrimPrefix(p, "~")), nil
}

// RepoFile names one file in a model repository on the hub.
type RepoFile struct {
	Repo string // "ORG/NAME"
	Name string // path inside the repository, '/'-separated
}

func (f RepoFile) String() string { return f.Repo + "/" + f.Name }

// validate rejects names that could escape the cache directory.
func (f RepoFile) validate() error {
	org, name, ok := strings.Cut(f.Repo, "/")
	if !ok || !validSegment(org) || !validSegment(name) || strings.Contains(name, "/") {
		return fmt.Errorf("hub repository %q: want ORG/NAME with letters, digits, '-', '_' or '.'", f.Repo)
	}
	if f.Name == "" || strings.HasPrefix(f.Name, "/") {
		return fmt.Errorf("%s: empty or absolute file name", f)
	}
	for _, seg := range strings.Split(f.Name, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, '\\') {
			return fmt.Errorf("%s: file name must be a clean relative path", f)
		}
	}
	return nil
}

func validSegment(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 96 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// validRevision accepts what can safely name a directory under snapshots/:
// a commit hash or a branch name without path separators.
func validRevision(s string) bool {
	return validSegment(s)
}

// RepoDir is the repository's folder: <cache>/models--ORG--NAME.
func (c Cache) RepoDir(repo string) string {
	return filepath.Join(c.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// Entry is a file present in the cache.
type Entry struct {
	RepoFile
	Path     string // the snapshot path: what to open
	Blob     string // the blob the snapshot links to; "" when the snapshot holds a plain file
	Revision string // the snapshot directory: a commit hash, or "main" from a static mirror
	Size     int64
}

// Ref is the commit refs/<revision> names, or "" when there is none (or it
// is not a usable directory name).
func (c Cache) Ref(repo, revision string) string {
	b, err := os.ReadFile(filepath.Join(c.RepoDir(repo), "refs", revision))
	if err != nil || len(b) > 256 {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if !validRevision(s) {
		return ""
	}
	return s
}

// Lookup finds f in the cache without touching the network. It tries the
// snapshot refs/<revision> points at, then a snapshot named <revision>
// itself, then any other snapshot holding the file (newest first), so a
// cache filled by any huggingface_hub version, or by hand, is used as it is.
// A revision that is a commit hash is pinned: only its own snapshot counts.
// ok is false when no snapshot has the file as a regular, non-empty file.
func (c Cache) Lookup(f RepoFile, revision string) (e Entry, ok bool, err error) {
	if err := f.validate(); err != nil {
		return Entry{}, false, err
	}
	if revision == "" {
		revision = DefaultRevision
	}
	snaps := filepath.Join(c.RepoDir(f.Repo), "snapshots")
	var tried []string
	try := func(rev string) bool {
		if rev == "" || !validRevision(rev) {
			return false
		}
		for _, t := range tried {
			if t == rev {
				return false
			}
		}
		tried = append(tried, rev)
		p := filepath.Join(snaps, rev, filepath.FromSlash(f.Name))
		st, err := os.Stat(p) // follows the symlink into blobs/
		if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			return false
		}
		e = Entry{RepoFile: f, Path: p, Revision: rev, Size: st.Size()}
		if target, err := os.Readlink(p); err == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			e.Blob = filepath.Clean(target)
		}
		return true
	}
	if try(c.Ref(f.Repo, revision)) || try(revision) {
		return e, true, nil
	}
	if isHex(revision, 40) {
		return Entry{}, false, nil
	}
	dirs, err := os.ReadDir(snaps)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Entry{}, false, nil
		}
		return Entry{}, false, fmt.Errorf("hugging face cache: %w; check the permissions of %s", err, c.Dir)
	}
	type snap struct {
		name string
		mod  int64
	}
	var all []snap
	for _, d := range dirs {
		if info, err := d.Info(); err == nil && d.IsDir() {
			all = append(all, snap{d.Name(), info.ModTime().UnixNano()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	for _, s := range all {
		if try(s.name) {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Dest is where f would be placed for a manual copy or by a download whose
// commit is not known yet: the snapshot refs/<revision> names, else
// snapshots/<revision>, which huggingface_hub and Lookup both read.
func (c Cache) Dest(f RepoFile, revision string) string {
	if revision == "" {
		revision = DefaultRevision
	}
	rev := c.Ref(f.Repo, revision)
	if rev == "" {
		rev = revision
	}
	return filepath.Join(c.RepoDir(f.Repo), "snapshots", rev, filepath.FromSlash(f.Name))
}
