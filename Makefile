# Zonos Stream — every way to build, test and measure goes through here.
#   make run    install what is missing, build, start the desktop app
#   make test   install what is missing, vet, run every test (race on engine/audio)
#   make bench  run the Go benchmarks (CPU backend)
SHELL := /bin/bash
GO ?= go
GOLDEN ?= $(abspath ../shared/golden)
export ZONOS_GOLDEN_DIR ?= $(GOLDEN)
export LANG ?= en_US.UTF-8

# Debian packages the build and the tests need:
#   libespeak-ng-dev  cgo phonemizer (engine/text)
#   sox libsox-fmt-mp3  test clips in every format and WAV header checks (audio)
#   libopusenc-dev    cgo Ogg Opus encoder of the speech server (audio/encode)
#   libmp3lame-dev    cgo MP3 encoder (LAME) of the speech server (audio/encode)
#   libgl1-mesa-dev xorg-dev  Fyne/GLFW (app, cmd/zonos-stream)
#   xvfb              headless display for GUI smoke tests
#   desktop-file-utils appstream xz-utils  release archives: validate the .desktop and metainfo, compress (packaging/)
DEB_PKGS := libespeak-ng-dev espeak-ng-data sox libsox-fmt-mp3 libopusenc-dev libmp3lame-dev libgl1-mesa-dev xorg-dev xvfb imagemagick pkg-config gcc desktop-file-utils appstream xz-utils
# and what only the tests need (make test-deps):
#   opus-tools        opusdec, the independent decoder of the Opus tests (audio/encode)
#   chromium          headless browser that runs the server's page and its cross-origin checks (server/page_test.go)
TEST_DEB_PKGS := opus-tools chromium
# Node.js and npm run OpenAI's official Node client against the server
# (server/openai_client_test.go, which installs the client with npm ci).
# They are installed only when the commands are missing: a nodejs from
# nodesource bundles npm, and Debian's npm package conflicts with it.
NODE_PKGS = $$(command -v node >/dev/null || echo nodejs) $$(command -v npm >/dev/null || echo npm)

.PHONY: deps test-deps run build test test-race vet bench clean screenshot

# Installing Debian packages, as root or through sudo. On a fresh machine
# another apt process (unattended-upgrades) often holds apt's locks for
# minutes, so both steps wait for it, up to APT_LOCK_WAIT seconds:
# apt-get install waits for the dpkg lock itself (DPkg::Lock::Timeout,
# apt >= 1.9.11; Debian 12 has 2.6), but apt-get update does not wait for
# the package-list lock (apt 2.6 fails at once), so apt_update retries it
# while that lock is taken (LC_ALL=C: the message it looks for is apt's
# English one).
APT_LOCK_WAIT ?= 600
apt_sudo = SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo
apt_get = $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_WAIT)
apt_procs = 'apt|apt-get|aptitude|dpkg|unattended-upgr'
apt_update = waited=0; \
	until out=$$($$SUDO env LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_WAIT) update -qq 2>&1); do \
	  if ! grep -q 'Could not get lock' <<<"$$out" || [ $$waited -ge $(APT_LOCK_WAIT) ]; then echo "$$out" >&2; exit 1; fi; \
	  [ $$waited -gt 0 ] || echo "waiting up to $(APT_LOCK_WAIT) s for another apt process to release the package lists: $$(grep -m1 'Could not get lock' <<<"$$out")"; \
	  sleep 5; waited=$$((waited + 5)); \
	done; [ -z "$$out" ] || echo "$$out"
apt_install_note = ! pgrep -x $(apt_procs) >/dev/null 2>&1 || \
	echo "another package manager is running ($$(pgrep -x -l -d ', ' $(apt_procs))); waiting up to $(APT_LOCK_WAIT) s for it to finish"
apt_install = $(apt_sudo); $(apt_update); $(apt_install_note); $(apt_get) install -y -qq --no-install-recommends

install_missing = missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	for p in $(2); do missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(apt_install) $$missing; \
	fi

deps:
	@$(call install_missing,$(DEB_PKGS),)

test-deps: deps helm
	@$(call install_missing,$(TEST_DEB_PKGS),$(NODE_PKGS))

# Helm renders and lints the Kubernetes chart in the tests of deploy/
# (docs/deploy.md). It comes from the Go module proxy, built into .tools/
# (about 3.5 minutes on 2 cores) when .tools/helm is missing or was built
# from another HELM_VERSION.
HELM_VERSION ?= v3.22.0
TOOLS := $(abspath .tools)
.PHONY: helm
helm:
	@test -x $(TOOLS)/helm -a -f $(TOOLS)/.helm-$(HELM_VERSION) || { \
	  echo "installing helm $(HELM_VERSION) into $(TOOLS) (go install, a few minutes)"; \
	  GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) && \
	  rm -f $(TOOLS)/.helm-* && touch $(TOOLS)/.helm-$(HELM_VERSION); }

build: deps
	mkdir -p bin
	$(GO) build -o bin/zonos ./cmd/zonos
	$(GO) build -o bin/zonos-stream ./cmd/zonos-stream

# make run builds with CUDA when nvidia-smi lists a GPU (a cuda build needs
# the driver's libcuda.so.1 to start at all: gpu/doc.go), else without.
HAVE_GPU := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && echo 1)
run: $(if $(HAVE_GPU),build-cuda,build)
	@# Fyne reads the locale from LANG and rejects C/POSIX ones.
	case "$${LANG:-C}" in C|C.*|POSIX) export LANG=en_US.UTF-8;; esac; ./bin/zonos-stream

# A screenshot of the real window under Xvfb after one utterance on the tiny
# golden models (docs/screenshots/main.png).
screenshot: build
	./cmd/zonos-stream/screenshot.sh

vet: deps
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

test: test-deps vet
	$(GO) test -count=1 -timeout 60m ./...
	$(GO) test -count=1 -race -short -timeout 30m ./engine/... ./audio/... ./app/... ./server/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 5x ./engine/...

clean:
	rm -rf bin dist .devbin

# CUDA backend (gpu/, build tag cuda; ../shared/docs/GPU.md). cuda.h and
# libcuda come from Debian non-free (CUDA 11.8 headers: gorgonia.org/cu does
# not build against CUDA 13's); the binary runs on any newer driver.
.PHONY: cuda-deps kernels build-cuda
CUDA_H ?= /usr/include/cuda.h
DEBIAN_SOURCES ?= /etc/apt/sources.list.d/debian.sources
cuda-deps:
	@test -f $(CUDA_H) || { $(apt_sudo); \
	  $$SUDO sed -i 's/^Components: main$$/Components: main contrib non-free/' $(DEBIAN_SOURCES) && \
	  { $(apt_install) nvidia-cuda-dev; }; }

# Regenerate gpu/kernels/*.ptx (needs nvcc: Debian's nvidia-cuda-toolkit or
# the GPU machine's) and check the source hashes in their headers.
kernels:
	gpu/kernels/gen.sh
	$(GO) test -count=1 ./gpu/kernels/

build-cuda: deps cuda-deps
	mkdir -p bin
	CGO_ENABLED=1 $(GO) build -tags cuda -o bin/zonos ./cmd/zonos
	CGO_ENABLED=1 $(GO) build -tags cuda -o bin/zonos-stream ./cmd/zonos-stream

# Fuzz every parser of outside input for FUZZTIME each, one target at a time
# (docs/reliability.md). Seeds and crashers live in each package's
# testdata/fuzz; pick targets with FUZZ_TARGETS="pkg:FuzzName …" and pass
# e.g. FUZZFLAGS=-parallel=1 to keep to one core.
FUZZTIME ?= 60s
FUZZFLAGS ?=
FUZZ_TARGETS ?= engine/weights:FuzzParse engine/weights:FuzzParseTorch \
  engine/weights:FuzzParseContentRange engine/weights:FuzzRefAndLookupNames \
  engine/zonos:FuzzParseConfig engine/dac:FuzzParseConfig \
  engine/text:FuzzPrepare engine/text:FuzzSplit \
  audio:FuzzDecodeClipWAV audio:FuzzDecodeClipFLAC audio:FuzzDecodeClipMP3 audio:FuzzDecodeClipVorbis \
  cmd/zonos:FuzzReadNpyVector internal/voices:FuzzDecode
.PHONY: fuzz
fuzz: deps
	@set -e; for pt in $(FUZZ_TARGETS); do \
	  echo "== $${pt%%:*} $${pt##*:} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${pt##*:}$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./$${pt%%:*}; \
	done

# Release archives and installing (packaging/; README "Install"):
#   make package     dist/zonos-stream-<git describe>-linux-<arch>-{cpu,cuda}.tar.xz
#                    (installs the CUDA headers first: make cuda-deps)
#   make install     build the archive of this checkout and install it into
#                    PREFIX (default ~/.local); FLAVOR=cuda for the CUDA build
#   make uninstall   remove it from PREFIX again
# make test checks the CPU archive (packaging/archive_test.go).
PREFIX ?= $(HOME)/.local
FLAVOR ?= cpu
.PHONY: package install uninstall
package: deps cuda-deps
	packaging/package.sh cpu cuda

install: deps $(if $(filter cuda,$(FLAVOR)),cuda-deps)
	packaging/install.sh install $(FLAVOR) "$(PREFIX)"

uninstall:
	packaging/install.sh uninstall "$(PREFIX)"
