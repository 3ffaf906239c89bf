#!/usr/bin/env bash
# Nothing is overwritten that a command should not write: an output that is a symlink or a FIFO, or
# a file of a run (its metrics.jsonl, config.yaml, checkpoints), is refused by `report`; `train`
# refuses a run.dir that holds other files (a user's config.yaml beside `run.dir=.`) or a run whose
# files were replaced by links; `ablate` refuses a directory holding other files or a training run.
# Each exits 2 with one line, before a byte is written.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_tiny_recall "$tmp/tiny.yaml"
"$gattn" train --config "$tmp/tiny.yaml" train.max_steps=4 checkpoint.every=2 run.dir="$tmp/run" >/dev/null 2>&1 ||
  fail "could not make the run"
snapshot() { (cd "$1" && find . -printf '%p %y %l\n' -type f -exec md5sum {} + | sort); }

# expect_refused NAME NEEDLE COMMAND ARGS...: exit 2, one line holding NEEDLE, within 60 s (a FIFO
# must not block), and nothing under $tmp changed.
expect_refused() {
  local name=$1 needle=$2
  shift 2
  local before err rc
  before=$(snapshot "$tmp")
  err=$(timeout 60 "$gattn" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$name: more than one line: $err"
  grep -qF -- "$needle" <<<"$err" || fail "$name: message lacks '$needle': $err"
  [[ $(snapshot "$tmp") == "$before" ]] || fail "$name: something under the test directory changed"
}

# report: outputs that are not regular files, and files of the run.
echo "the user's page" >"$tmp/page.html"
ln -s "$tmp/page.html" "$tmp/link.html"
expect_refused report_symlink "is a symbolic link" report "$tmp/run" --output "$tmp/link.html"
mkfifo "$tmp/fifo.html"
expect_refused report_fifo "is a FIFO" report "$tmp/run" --output "$tmp/fifo.html"
expect_refused report_directory "is a directory" report "$tmp/run" --output "$tmp/run/checkpoints"
for f in metrics.jsonl config.yaml checkpoints/latest checkpoints/step_00000004/model.safetensors \
  checkpoints/step_00000004/report.html; do
  expect_refused "report_into_$f" "of the run in $tmp/run" report "$tmp/run" --output "$tmp/run/$f"
done
# The run's own report, and a regular file elsewhere, are written.
out=$("$gattn" report "$tmp/run" 2>&1) || fail "report into the run directory exited $?: $out"
[[ -s $tmp/run/report.html ]] || fail "report wrote no $tmp/run/report.html"
out=$("$gattn" report "$tmp/run" --output "$tmp/page.html" 2>&1) || fail "report over a regular file exited $?: $out"
grep -q "<html" "$tmp/page.html" || fail "report did not replace the regular file"

# train: a run directory is new, empty or a gattn run.
mkdir "$tmp/project"
cp "$tmp/tiny.yaml" "$tmp/project/config.yaml"
echo "# the user's own config, which a run's config.yaml would replace" >>"$tmp/project/config.yaml"
expect_refused train_user_folder "is not empty (config.yaml) and holds no gattn run" \
  train --config "$tmp/tiny.yaml" run.dir="$tmp/project"
expect_refused train_user_folder_resume "holds no gattn run" \
  train --config "$tmp/tiny.yaml" run.dir="$tmp/project" --resume auto
# run.dir=. beside the config being read (docs/cli.md's example).
before=$(snapshot "$tmp")
err=$(cd "$tmp/project" && "$gattn" train --config config.yaml train.max_steps=1 run.dir=. 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "run.dir=. exited $rc, expected 2 ($err)"
[[ $(snapshot "$tmp") == "$before" ]] || fail "run.dir=. changed something"
# A run whose metrics.jsonl became a link is not appended through.
cp -r "$tmp/run" "$tmp/linked"
mv "$tmp/linked/metrics.jsonl" "$tmp/linked_metrics.jsonl"
ln -s "$tmp/linked_metrics.jsonl" "$tmp/linked/metrics.jsonl"
expect_refused train_linked_metrics "metrics.jsonl is a symbolic link" \
  train --config "$tmp/tiny.yaml" train.max_steps=6 run.dir="$tmp/linked" --resume auto
# An empty directory is a fine run directory.
mkdir "$tmp/empty"
"$gattn" train --config "$tmp/tiny.yaml" train.max_steps=2 run.dir="$tmp/empty" >/dev/null 2>&1 ||
  fail "training into an empty directory failed"

# ablate: the ablation directory is new, empty or an ablation's.
cat >"$tmp/abl.yaml" <<EOF2
base: $tmp/tiny.yaml
overrides:
  train.max_steps: 2
grid:
  model.gate.kind: [none]
EOF2
mkdir "$tmp/notes"
echo "my notes" >"$tmp/notes/summary.md"
expect_refused ablate_user_folder "holds no ablation" ablate --config "$tmp/abl.yaml" run.dir="$tmp/notes"
expect_refused ablate_into_run "holds a training run" ablate --config "$tmp/abl.yaml" run.dir="$tmp/run"
echo "cli_output_paths: ok"
