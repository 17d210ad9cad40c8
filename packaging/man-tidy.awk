# man-tidy: roff from lowdown made lint-clean. A heading (.SH/.SS, then its text) is not followed
# by a paragraph macro; a line of filled prose over 72 characters (80 bytes once mandoc spells
# out UTF-8) is broken at spaces (roff joins the pieces again); lines in examples (.EX/.EE),
# tables (.TS/.TE) and requests stay as they are.
/^\.S[HS]$/ { print; heading = 2; next }
heading == 1 && /^\.[LP]P$/ { heading = 0; next }
{ if (heading) heading-- }
/^\.(EX|TS)/ { verbatim = 1 }
/^\.(EE|TE)/ { verbatim = 0 }
verbatim || /^[.']/ || length($0) <= 72 { print; next }
{
    line = ""
    n = split($0, words, " ")
    for (i = 1; i <= n; i++) {
        if (line != "" && length(line) + 1 + length(words[i]) > 72) {
            print line
            line = ""
        }
        word = words[i]
        if (line == "" && word ~ /^[.']/)
            word = "\\&" word
        line = line == "" ? word : line " " word
    }
    if (line != "")
        print line
}
