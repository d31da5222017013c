package weights

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeHub emulates huggingface.co on loopback: regular files answer 200
// with their git-sha1 as ETag; LFS files answer 302 to a second server (the
// "CDN") with X-Linked-Etag (sha256) and X-Linked-Size, as the hub does.
type fakeHub struct {
	t      *testing.T
	commit string
	token  string // required when set
	files  map[string][]byte
	lfs    map[string]bool
	// wrongHash makes the hub publish a sha256 that does not match.
	wrongHash map[string]bool
	// cutAfter, when > 0, makes the first n GETs of LFS bodies stop after
	// that many bytes and drop the connection.
	cutAfter int
	cuts     int
	// fail5xx makes the first n HEAD requests answer 503.
	fail5xx int
	// slow, when set, makes CDN bodies send 64 KiB and then wait on it.
	slow chan struct{}

	hub, cdn *httptest.Server
	mu       sync.Mutex
	log      []logged
}

type logged struct {
	server, method, path, rng, auth string
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, commit: "0123456789abcdef0123456789abcdef01234567", files: map[string][]byte{}, lfs: map[string]bool{}, wrongHash: map[string]bool{}}
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(func() {
		if h.slow != nil {
			select {
			case <-h.slow:
			default:
				close(h.slow)
			}
		}
		h.hub.Close()
		h.cdn.Close()
	})
	return h
}

// addBundle adds the six files of a variant; the .safetensors and .pt files
// are LFS, larger than one read buffer.
func (h *fakeHub) addBundle(v Variant) {
	for i, f := range BundleFiles(v) {
		if strings.HasSuffix(f.Name, ".json") {
			h.add(f, []byte(fmt.Sprintf(`{"repo": %q, "n": %d}`, f.Repo, i)), false)
		} else {
			h.add(f, testBytes(int64(i), 300<<10+i*1000), true)
		}
	}
}

func (h *fakeHub) add(f RepoFile, data []byte, lfs bool) {
	h.files[f.String()] = data
	h.lfs[f.String()] = lfs
}

func testBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func gitSHA1Hex(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (h *fakeHub) record(server string, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, logged{server, r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
}

func (h *fakeHub) requests() []logged {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logged(nil), h.log...)
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.record("hub", r)
	// /{org}/{name}/resolve/{rev}/{file...}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	if r.Method == http.MethodHead && h.fail5xx > 0 {
		h.fail5xx--
		h.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h.mu.Unlock()
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		w.Header().Set("X-Error-Message", "Invalid credentials in Authorization header")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	key := parts[0] + "/" + parts[1] + "/" + parts[4]
	data, ok := h.files[key]
	w.Header().Set("X-Repo-Commit", h.commit)
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		w.Header().Set("X-Error-Message", "Entry not found")
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if h.lfs[key] {
		sum := sha256Hex(data)
		published := sum
		if h.wrongHash[key] {
			published = sha256Hex(append([]byte("x"), data...))
		}
		w.Header().Set("X-Linked-Etag", `"`+published+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
		w.Header().Set("ETag", `"`+gitSHA1Hex([]byte("pointer "+sum))+`"`)
		w.Header().Set("Location", h.cdn.URL+"/repos/ab/cd/"+sum+"?X-Amz-Signature=secret-signature")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitSHA1Hex(data)+`"`)
	serveBytes(w, r, data, -1)
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record("cdn", r)
	sum := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	var data []byte
	for k, d := range h.files {
		if h.lfs[k] && sha256Hex(d) == sum {
			data = d
		}
	}
	if data == nil {
		http.NotFound(w, r)
		return
	}
	limit := -1
	h.mu.Lock()
	if r.Method == http.MethodGet && h.cutAfter > 0 && h.cuts > 0 {
		h.cuts--
		limit = h.cutAfter
	}
	slow := h.slow
	h.mu.Unlock()
	if slow != nil && r.Method == http.MethodGet {
		serveBytes(w, r, data, 64<<10)
		select {
		case <-slow:
		case <-r.Context().Done():
		}
		panic(http.ErrAbortHandler)
	}
	serveBytes(w, r, data, limit)
}

// serveBytes answers GET/HEAD with optional "Range: bytes=N-", and when
// limit >= 0 sends only that many body bytes, then drops the connection.
func serveBytes(w http.ResponseWriter, r *http.Request, data []byte, limit int) {
	start := 0
	if rg := r.Header.Get("Range"); rg != "" {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if err != nil || n > len(data) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(data)-1, len(data)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)-start))
	w.Header().Set("Content-Type", "application/octet-stream")
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if r.Method == http.MethodHead {
		return
	}
	body := data[start:]
	if limit >= 0 && limit < len(body) {
		w.Write(body[:limit])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Write(body)
}

// downloader returns a Downloader for the fake hub over a fresh cache,
// with quick retries.
func (h *fakeHub) downloader(cacheDir string) *Downloader {
	return &Downloader{
		Cache:       Cache{Dir: cacheDir, From: "test"},
		Endpoint:    h.hub.URL,
		Token:       Secret(h.token),
		MaxAttempts: 4,
		Backoff:     1,
		Client:      h.hub.Client(),
	}
}
