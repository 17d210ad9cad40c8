# trainer_lib.sh: what the suites that run cosched-train add to tests/lib/common.sh (sourced after
# it): the trainer, mpirun as the CI container runs it, and reads of its JSON lines.
# shellcheck shell=bash disable=SC2034,SC2154 # TRAIN and MPIRUN are for the suites; train is common.sh's
TRAIN=$train
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe"

# field FILE EVENT KEY: KEY of the last line of event EVENT in FILE
field() {
    python3 -c '
import json, sys
ev, key = sys.argv[2], sys.argv[3]
v = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
v = [x for x in v if x.get("event") == ev]
print(v[-1][key])' "$@"
}
# hashes FILE: the summaries' parameter hashes, sorted, one line
hashes() {
    python3 -c '
import json, sys
print(" ".join(sorted(l["param_hash"] for l in map(json.loads, open(sys.argv[1]))
                      if l["event"] == "summary")))' "$1"
}
# same_on_ranks FILE: two summaries, with the same parameters
same_on_ranks() {
    local h
    read -ra h <<<"$(hashes "$1")"
    [ ${#h[@]} -eq 2 ] && [ "${h[0]}" = "${h[1]}" ]
}
