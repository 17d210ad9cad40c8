#!/bin/sh
# md2man: a man page from its one source, a docs/*.md page shaped as one ("# name(N)", then
# "## NAME", "## SYNOPSIS" ...): lowdown turns it into roff; the title line gives way to .TH,
# literal text is bold (mandoc knows no \fC), the title is upper case, and man-tidy.awk leaves
# no paragraph macro after a heading and no filled line over 80 bytes (72 characters), so that `mandoc -T lint`
# and `groff -ww` have nothing to say.
# Usage: md2man.sh INPUT.md NAME SECTION VERSION DATE OUTPUT
set -eu
[ $# -eq 6 ] || { echo "usage: md2man.sh INPUT.md NAME SECTION VERSION DATE OUTPUT" >&2; exit 2; }
in=$1 name=$2 section=$3 version=$4 date=$5 out=$6
sed -e '1{/^# /d;}' -e 's/^## /# /' -e 's/^### /## /' "$in" |
    lowdown -s -Tman -M "title=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')" -M "section=$section" -M "date=$date" \
        -M "source=cosched $version" -M "volume=cosched manual" |
    sed -e 's/\\fC/\\fB/g' |
    awk -f "$(dirname "$0")/man-tidy.awk" >"$out.tmp"
mv "$out.tmp" "$out"
