#!/usr/bin/env bash
# Builds the Linux release archives, one per flavor:
#   packaging/package.sh [--out DIR] cpu|cuda...      (DIR defaults to dist)
# → DIR/zonos-stream-<version>-linux-<arch>-<flavor>.tar.xz, one top-level
# folder of that name holding README.md, LICENSE, VERSION, a Makefile
# (install/uninstall, PREFIX; packaging/archive.mk) and usr/local/{bin,share}.
# <version> is `git describe --tags --always --dirty`, or $VERSION if set.
# The cuda flavor needs cuda.h (make cuda-deps), not a GPU.
#
# `fyne package` (fyne.io/tools) makes the .desktop entry from FyneApp.toml
# plus packaging/linux.toml, and lays out the binary. This script does what
# it cannot:
#   - the build. fyne builds only the package in its source folder, then
#     writes FyneApp.toml back (Build+1) and drops a temporary metadata .go
#     file beside the source: in a tree shared with others that is their
#     files. So we go build (fyne's release mode: the `release` tag, -s -w;
#     plus -X main.version and the cuda tag) and give fyne the executable
#     (--exe) and a copy of FyneApp.toml in a scratch folder.
#   - the rest of the archive: the zonos CLI, hicolor icons (48–512 px,
#     packaging/icons), AppStream metainfo (packaging/metainfo.xml.in),
#     README and LICENSE, and an install Makefile for all of it (fyne's
#     installs one binary, the desktop file and a pixmap).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/dist
if [ "${1:-}" = --out ]; then
	out=${2:?--out needs a folder}
	shift 2
fi
[ $# -gt 0 ] || { echo "usage: package.sh [--out DIR] cpu|cuda..." >&2; exit 2; }
for flavor in "$@"; do
	case $flavor in cpu | cuda) ;; *) echo "package.sh: a flavor is cpu or cuda, not $flavor" >&2; exit 2 ;; esac
done

GO=${GO:-go}
FYNE_TOOLS=${FYNE_TOOLS:-fyne.io/tools/cmd/fyne@v1.7.4}
ICON_SIZES="48x48 64x64 128x128 256x256 512x512"

cd "$root"
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
appid=$(sed -n 's/^[[:space:]]*ID[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' FyneApp.toml)
icon=$(sed -n 's/^[[:space:]]*Icon[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' FyneApp.toml)
if [ -z "$appid" ] || [ ! -f "$icon" ]; then
	echo "package.sh: FyneApp.toml needs Details.ID and an Icon that exists (got '$appid', '$icon')" >&2
	exit 1
fi
arch=$($GO env GOARCH)
# AppStream's release date and the archive's mtimes: the commit's time.
epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
date=$(date -u -d "@$epoch" +%F)

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/zonos-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

# fyne package runs on this scratch folder; the stub Go file is there only
# because fyne refuses a folder without Go code.
stage=$work/fyne
mkdir -p "$stage/$(dirname "$icon")"
{ cat FyneApp.toml; echo; cat packaging/linux.toml; } >"$stage/FyneApp.toml"
cp "$icon" "$stage/$icon"
printf 'package main\n\nfunc main() {}\n' >"$stage/main.go"
fyne=$work/tools/fyne
GOBIN=$work/tools $GO install "$FYNE_TOOLS"

one() {
	local flavor=$1 tags=release
	[ "$flavor" = cuda ] && tags=release,cuda
	local name=zonos-stream-$version-linux-$arch-$flavor
	local w=$work/$flavor
	echo "package: $name (go build -tags $tags)"
	mkdir -p "$w/bin" "$w/fyneout"
	for cmd in zonos-stream zonos; do
		CGO_ENABLED=1 $GO build -tags "$tags" -ldflags "-s -w -X main.version=$version" -o "$w/bin/$cmd" "./cmd/$cmd"
	done

	rm -f "$stage"/*.tar.xz
	(cd "$stage" && "$fyne" package --target linux --exe "$w/bin/zonos-stream")
	local fynetar
	fynetar=$(find "$stage" -maxdepth 1 -name '*.tar.xz' | head -1)
	[ -n "$fynetar" ] || { echo "package.sh: fyne package wrote no archive" >&2; exit 1; }
	tar -xJf "$fynetar" -C "$w/fyneout"
	# fyne lays out usr/local when the build machine has /usr/local, else usr.
	local desktop
	desktop=$(find "$w/fyneout" -path "*/share/applications/$appid.desktop" | head -1)
	[ -n "$desktop" ] || { echo "package.sh: no $appid.desktop in fyne's archive" >&2; exit 1; }
	local fyneprefix=${desktop%/share/applications/*}

	local top=$w/$name
	local usr=$top/usr/local
	mkdir -p "$usr/bin" "$usr/share/applications" "$usr/share/metainfo"
	cp "$fyneprefix/bin/zonos-stream" "$w/bin/zonos" "$usr/bin/"
	cp "$desktop" "$usr/share/applications/"
	$GO run ./packaging/icons -src "$icon" -name "$appid" -out "$usr/share/icons/hicolor" \
		-sizes "$(echo $ICON_SIZES | sed 's/x[0-9]*//g; s/ /,/g')"
	sed -e "s|@APPID@|$appid|g" -e "s|@VERSION@|$version|g" -e "s|@DATE@|$date|g" \
		packaging/metainfo.xml.in >"$usr/share/metainfo/$appid.metainfo.xml"
	sed -e "s|@APPID@|$appid|g" -e "s|@ICON_SIZES@|$ICON_SIZES|g" packaging/archive.mk >"$top/Makefile"
	cp README.md LICENSE "$top/"
	printf 'zonos-stream %s linux-%s %s\n' "$version" "$arch" "$flavor" >"$top/VERSION"

	chmod -R u=rwX,go=rX "$top"
	tar -C "$w" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - "$name" |
		xz -T0 -6 >"$out/$name.tar.xz.tmp"
	mv "$out/$name.tar.xz.tmp" "$out/$name.tar.xz"
	echo "package: $out/$name.tar.xz"
}

for flavor in "$@"; do
	one "$flavor"
done
