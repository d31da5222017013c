#!/usr/bin/env bash
# make install / make uninstall for a checkout:
#   packaging/install.sh install cpu|cuda PREFIX   builds that archive (package.sh), unpacks it, runs its Makefile's install
#   packaging/install.sh uninstall PREFIX          removes what install put there
# So a checkout installs exactly what a user of the archive gets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=$(mktemp -d "${TMPDIR:-/tmp}/zonos-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

case ${1:-} in
install)
	flavor=${2:?flavor}
	prefix=${3:?PREFIX}
	version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
	VERSION=$version packaging/package.sh --out "$work" "$flavor"
	tar -xJf "$work"/zonos-stream-*-"$flavor".tar.xz -C "$work"
	make -C "$work/zonos-stream-$version-linux-$(${GO:-go} env GOARCH)-$flavor" install PREFIX="$prefix"
	;;
uninstall)
	prefix=${2:?PREFIX}
	appid=$(sed -n 's/^[[:space:]]*ID[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' FyneApp.toml)
	sizes=$(sed -n 's/^ICON_SIZES="\(.*\)"/\1/p' packaging/package.sh)
	sed -e "s|@APPID@|$appid|g" -e "s|@ICON_SIZES@|$sizes|g" packaging/archive.mk >"$work/Makefile"
	make -C "$work" uninstall PREFIX="$prefix"
	;;
*)
	echo "usage: install.sh install cpu|cuda PREFIX | uninstall PREFIX" >&2
	exit 2
	;;
esac
