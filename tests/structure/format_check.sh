#!/usr/bin/env bash
# format_check: every tracked C file (*.c, *.h) is as clang-format leaves it under the tree's
# .clang-format; one check per top-level folder, naming the first files and lines that are not.
# Fix with: clang-format -i $(git ls-files '*.c' '*.h')
set -u
here=$(cd "$(dirname "$0")" && pwd)
# Run by hand too (the fix above), where no build says where the tree is: the library needs a
# build directory's name, and nothing here reads it.
export COSCHED_SOURCE_ROOT=${COSCHED_SOURCE_ROOT:-$(cd "$here/../.." && pwd)}
export COSCHED_BUILD_ROOT=${COSCHED_BUILD_ROOT:-$COSCHED_SOURCE_ROOT/build}
. "$here/../lib/common.sh"
style=$root/.clang-format
# Files that are not ours to format (vendored or generated sources), as an extended regex on
# the path from the root. None today: generated files live in the build directory only.
exclude='^$'
# .clang-format is tuned to clang-format 14 (Debian bookworm's); other versions break some lines
# differently, so they would report code that 14 leaves alone.
want_major=14
shown_files=5 # offending files listed per folder
shown_places=3 # places listed per offending file

formatter=${COSCHED_CLANG_FORMAT:-}
if [ -z "$formatter" ]; then
    for c in clang-format-$want_major clang-format; do
        if command -v "$c" >/dev/null; then
            formatter=$c
            break
        fi
    done
fi
if [ -z "$formatter" ]; then
    skip "C sources are formatted" "clang-format is not installed (packaging/debian-deps.txt lists it)"
    finish
    exit 0
fi
version=$("$formatter" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p')
if [ "$version" != "$want_major" ]; then
    skip "C sources are formatted" "$formatter is version ${version:-unknown}, .clang-format is for $want_major"
    finish
    exit 0
fi
if [ ! -f "$style" ]; then
    not_ok "$style exists"
    finish
    exit 1
fi

# The tracked files of a clone; without git (a source tarball), what find sees outside build
# directories.
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git -C "$root" ls-files -- '*.c' '*.h')
else
    mapfile -t files < <(cd "$root" && find . \( -name .git -o -type d -name 'build*' \) -prune -o \
        -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -Ev "$exclude")
if [ ${#files[@]} -eq 0 ]; then
    not_ok "C sources are found under $root"
    finish
    exit 1
fi

mapfile -t folders < <(printf '%s\n' "${files[@]}" | awk -F/ '{print (NF > 1 ? $1 : ".")}' | sort -u)
for folder in "${folders[@]}"; do
    if [ "$folder" = . ]; then
        mapfile -t group < <(printf '%s\n' "${files[@]}" | grep -v /)
    else
        mapfile -t group < <(printf '%s\n' "${files[@]}" | grep "^$folder/")
    fi
    # One run for the folder: clang-format names each place as FILE:LINE:COL: error: ...
    out=$(cd "$root" && "$formatter" --style="file:$style" --dry-run --Werror "${group[@]}" 2>&1)
    rc=$?
    mapfile -t bad < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | uniq)
    if [ $rc -eq 0 ] && [ ${#bad[@]} -eq 0 ]; then
        ok "$folder/: ${#group[@]} C files are formatted"
        continue
    fi
    if [ ${#bad[@]} -eq 0 ]; then # clang-format failed for another reason (the style file, say)
        not_ok "$folder/: clang-format runs on its C files" "$(printf '%s\n' "$out" | head -n 5)"
        continue
    fi
    why=("${#bad[@]} of ${#group[@]} files differ from what clang-format makes of them; the first:")
    for f in "${bad[@]:0:$shown_files}"; do
        mapfile -t lines < <(printf '%s\n' "$out" | grep -o "^$f:[0-9]*" | cut -d: -f2 | uniq)
        places=$(printf '%s, ' "${lines[@]:0:$shown_places}")
        places=${places%, }
        [ ${#lines[@]} -gt "$shown_places" ] && places+=", ... (${#lines[@]} lines)"
        why+=("  $f: lines $places")
    done
    # What the first one would become, to show the kind of change.
    first=${bad[0]}
    mapfile -t diff < <(cd "$root" && "$formatter" --style="file:$style" "$first" | diff -u "$first" - | sed -n '3,14p')
    why+=("  clang-format -i $first would change:" "${diff[@]/#/    }")
    not_ok "$folder/: C files are formatted (fix: clang-format -i \$(git ls-files '$folder/*.[ch]'))" "${why[@]}"
done
finish
