#!/usr/bin/env bash
# test_man: the man pages made from docs/*.md (docs/meson.build, packaging/md2man.sh) are clean
# to mandoc's and groff's linters, read as man pages, and say what the programs do: cosched(1)
# names every command `cosched --help` lists, coschedd.yaml(5) every key of the example file.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
pages="cosched.1 coschedd.8 coschedd.yaml.5 cosched-noise.1 cosched-train.1"
if ! command -v lowdown >/dev/null || ! command -v mandoc >/dev/null; then
    skip_all "lowdown or mandoc is not installed (packaging/debian-deps.txt lists both)"
fi
for page in $pages; do
    f=$build/docs/$page
    check "$page was made" test -s "$f"
    check "$page: mandoc -T lint has nothing to say" bash -c "out=\$(mandoc -T lint '$f' 2>&1); echo \"\$out\"; test -z \"\$out\""
    check "$page: groff -ww -z has nothing to say" bash -c "out=\$(groff -ww -z -k -man '$f' 2>&1); echo \"\$out\"; test -z \"\$out\""
    name=${page%.*}
    check "$page reads as a man page: its title, NAME and SYNOPSIS" bash -c \
        "mandoc -T utf8 '$f' | col -b >'$build/docs/$page.txt' && head -1 '$build/docs/$page.txt' | grep -qi '^${name}(${page##*.})' &&
         grep -qx 'NAME' '$build/docs/$page.txt' && grep -qx 'SYNOPSIS' '$build/docs/$page.txt' &&
         grep -A1 -x 'NAME' '$build/docs/$page.txt' | grep -q '$name - '"
done
commands=$("$build/client/cosched" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ && on {exit}')
check "cosched --help lists commands" test -n "$commands"
check "cosched(1)'s synopsis names every command cosched --help lists" bash -c "
    for c in $(echo $commands); do grep -Eq \"^ *cosched (\\[[^]]*\\] )*\$c\\b\" '$build/docs/cosched.1.txt' || { echo \"missing: \$c\"; exit 1; }; done"
keys=$(awk '/^[[:space:]]*#/ || !/:/ {next}
    { match($0, /^ */); depth = RLENGTH / 2; key = $1; sub(/:.*/, "", key); path[depth] = key
      full = key; for (i = depth - 1; i >= 0; i--) full = path[i] "." full; print full }' "$root/packaging/coschedd.yaml")
check "the example file has keys" test -n "$keys"
check "coschedd.yaml(5) documents every key of packaging/coschedd.yaml" bash -c "
    for k in $(echo $keys); do grep -qF \"\$k\" '$build/docs/coschedd.yaml.5.txt' || { echo \"missing: \$k\"; exit 1; }; done"
finish
