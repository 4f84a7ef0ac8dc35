#!/usr/bin/env bash
# Makes Assets/Albums/through-space-gapless: one continuous 24 s excerpt of Maxstack's
# "Through Space" (Debian package singularity-music 007-2, CC BY-SA 3.0) cut into three
# 16-bit FLAC tracks at frames 352817 and 705601 (offsets that are multiples of no period size).
# Usage: make_gapless_album.sh OUTPUT_DIR   (needs apt-get download, dpkg-deb, sox with FLAC)
set -euo pipefail
out=${1:?usage: $0 OUTPUT_DIR}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
( cd "$work" && apt-get download -q singularity-music=007-2 >/dev/null )
dpkg-deb -x "$work"/singularity-music_*.deb "$work/root"
sox -q -R "$work/root/usr/share/games/singularity/music/Through Space.ogg" -b 16 "$work/full.wav" \
  trim 100 24 rate -v 44100 gain -n -1
mkdir -p "$out"
starts=(0 352817 705601); lengths=(352817 352784 352799)
for n in 1 2 3; do
  cat > "$work/tags" <<TAGS
TITLE=Through Space, part $n
ARTIST=Maxstack
ALBUM=Through Space (gapless excerpt)
TRACKNUMBER=$n
GENRE=Electronic
COPYRIGHT=2007-2008, 2012 Max McCracken (Maxstack)
LICENSE=CC-BY-SA-3.0 https://creativecommons.org/licenses/by-sa/3.0/
SOURCE=Debian package singularity-music 007-2: /usr/share/games/singularity/music/Through Space.ogg
COMMENT=24 s continuous excerpt from 1:40, peak-normalised to -1 dBFS, 16-bit FLAC, cut into three tracks at frames 352817 and 705601. The original work has been modified.
TAGS
  sox -q -R "$work/full.wav" --comment-file "$work/tags" -C 8 "$out/part-$n.flac" \
    trim "${starts[$((n-1))]}s" "${lengths[$((n-1))]}s"
done
