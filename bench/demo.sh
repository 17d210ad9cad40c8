#!/usr/bin/env bash
# demo: the main job of the README's Quick start. Installs and builds what is missing, shows
# this machine's topology, then plans a JUWELS Booster node the two ways the study compared.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh
cosched=build/client/cosched
juwels=tests/topologies/juwels-booster.xml

echo; echo "### This machine, as the planner sees it"
"$cosched" topo

echo; echo "### A JUWELS Booster node: 4 A100 on NUMA 3, 1, 7, 5"
"$cosched" topo --topology "$juwels"

echo; echo "### The study's 'exclusive' mapping (training slowed by 1.8 % under memory noise)"
"$cosched" plan --topology "$juwels" --policy exclusive

echo; echo "### The study's 'shared' mapping (training slowed by 75 % on average under the same noise)"
"$cosched" plan --topology "$juwels" --policy shared

echo; echo "### What a job script pastes (first line: trainer srun, second: noise srun)"
"$cosched" plan --topology "$juwels" --format srun
