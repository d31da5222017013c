#!/usr/bin/env bash
# screenshot.sh [out.png]: run the real zonos-stream under Xvfb on the
# golden tiny models (random weights, real code paths), speak a sentence
# through the null audio device, and capture the screen with imagemagick's
# import once the window reports the end (default docs/screenshots/main.png).
# Needs xvfb and imagemagick; run from the repository root.
set -euo pipefail
out=${1:-docs/screenshots/main.png}
golden=${ZONOS_GOLDEN_DIR:-$(cd .. && pwd)/shared/golden}
bin=${BIN:-bin/zonos-stream}
num=${XVFB_DISPLAY:-97}
[ -x "$bin" ] || go build -o "$bin" ./cmd/zonos-stream
mkdir -p "$(dirname "$out")"
work=$(mktemp -d) # fresh HOME: default preferences
Xvfb ":$num" -screen 0 1240x880x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
app=
trap 'kill $app $xvfb 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 1
DISPLAY=":$num" LANG=en_US.UTF-8 HOME="$work" "$bin" --null-audio \
  --model-dir "$golden/zonos-hybrid-tiny" --dac-dir "$golden/dac-tiny" --max-seconds 3 \
  --say "Hello from Zonos Stream. Audio starts while the model is still generating." \
  2>"$work/log" &
app=$!
for _ in $(seq 600); do
  grep -q "utterance ended" "$work/log" && break
  kill -0 $app 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.2
done
sleep 0.5 # one more frame for the history row
DISPLAY=":$num" import -window root -trim +repage "$out"
echo "wrote $out"
