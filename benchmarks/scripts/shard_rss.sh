#!/usr/bin/env bash
# Resident memory and start-up time of `data.kind: tokens` on large shard sets (docs/benchmarks.md):
# writes llm.c shards of 100M tokens (200 MB, like llm.c's FineWeb shards) up to 4 GB, then trains a
# tiny model a fixed number of steps on a 1 GB and a 4 GB set, each once with the shards evicted from
# the page cache (cold: start-up reads them from disk) and once right after (warm). For each run it
# prints the start-up time (launch to the "gattn train:" line: the header checks and the token id
# scan, with the config and a tiny model), the peak resident set (VmHWM), the peak of RssAnon (the
# process's own memory, polled every 20 ms) and RssAnon / RssFile as last polled before it ended.
#
#   benchmarks/scripts/shard_rss.sh [DIR]      (the shards go to a fresh folder under DIR, default /tmp, and
#                                          are deleted at the end; 4 GB of disk; ~3 min on 2 cores)
#
# GATTN_BINARY picks the binary (default build/gattn). GATTN_BASELINE names a second binary (e.g. one
# built from an older commit) measured the same way on the same shards. SHARD_RSS_SIZES (GB, default
# "1 4") and SHARD_RSS_STEPS (default 200) change the sets and the run length.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gattn=$(realpath "${GATTN_BINARY:-$root/build/gattn}")
baseline=${GATTN_BASELINE:+$(realpath "$GATTN_BASELINE")}
sizes=${SHARD_RSS_SIZES:-1 4}
steps=${SHARD_RSS_STEPS:-200}
parent=${1:-/tmp}
mkdir -p "$parent"
work=$(mktemp -d "$parent/gattn_shard_rss.XXXXXX")
trap 'rm -rf "$work"' EXIT

largest=0
for gb in $sizes; do ((gb > largest)) && largest=$gb; done
echo "writing $largest GB of token shards to $work (load: $(uptime | sed 's/.*load/load/'))"
# Ids below 256 (random low bytes, zero high bytes): model.vocab_size 256 keeps the embedding tiny.
python3 - "$work/shards" "$largest" <<'PY'
import os, struct, sys
out, gb = sys.argv[1], int(sys.argv[2])
os.makedirs(out)
def shard(path, n):
    body = bytearray(2 * n)
    body[0::2] = os.urandom(n)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, n] + [0] * 253)))
        f.write(body)
per_shard = 100_000_000
for i in range(gb * 10**9 // (2 * per_shard)):
    shard("%s/train_%06d.bin" % (out, i), per_shard)
shard("%s/val_000000.bin" % out, 1_000_000)
PY

# Each set is a folder of links to the first shards: the 1 GB set is the 4 GB set's start.
for gb in $sizes; do
  mkdir "$work/set_${gb}gb"
  ln -s "$work/shards/val_000000.bin" "$work/set_${gb}gb/"
  for ((i = 0; i < gb * 5; ++i)); do ln -s "$work/shards/$(printf 'train_%06d.bin' $i)" "$work/set_${gb}gb/"; done
done

python3 - "$work" "$steps" "$sizes" "$gattn" ${baseline:+"$baseline"} <<'PY'
import glob, os, subprocess, sys, threading, time
work, steps, sizes, binaries = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]

def evict(folder):
    # Drops the set's pages from the page cache (this file's pages only, nothing else on the machine).
    for path in glob.glob(folder + "/*.bin"):
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

def status(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return {l.split(":")[0]: int(l.split()[1]) for l in f if l.startswith(("VmHWM", "RssAnon", "RssFile"))}
    except (OSError, ValueError, IndexError):
        return None

def run(binary, folder, run_dir):
    args = ["stdbuf", "-oL", binary, "train", "--config", "/dev/null", "run.dir=" + run_dir, "device=cpu",
            "train.precision=fp32", "train.threads=1", "data.kind=tokens", "data.path=" + folder,
            "model.vocab_size=256", "model.block_size=64", "model.n_layer=1", "model.n_head=2", "model.n_embd=32",
            "train.batch_size=12", "train.max_steps=" + steps, "train.log_every=" + steps, "eval.every=0",
            "eval.max_windows=4", "checkpoint.every=0"]
    start = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = {}
    lines = []
    def read():
        for line in p.stdout:
            lines.append(line)
            if line.startswith("gattn train:") and "startup" not in seen:
                seen["startup"] = time.monotonic() - start
    reader = threading.Thread(target=read)
    reader.start()
    last, anon_peak = {}, 0
    while p.poll() is None:
        s = status(p.pid)
        if s and len(s) == 3:
            last = s
            anon_peak = max(anon_peak, s["RssAnon"])
        time.sleep(0.02)
    reader.join()
    total = time.monotonic() - start
    if p.returncode != 0:
        sys.exit("%s exited %d:\n%s" % (binary, p.returncode, "".join(lines)))
    last["RssAnonPeak"] = anon_peak
    return seen.get("startup", float("nan")), total, last

mib = lambda kb: "%.0f MiB" % (kb / 1024)
print("| binary | set | cache | start-up | whole run | peak RSS (VmHWM) | peak RssAnon | RssAnon at end | RssFile at end |")
print("|---|---|---|---|---|---|---|---|---|")
for gb in sizes:
    folder = "%s/set_%sgb" % (work, gb)
    for i, binary in enumerate(binaries):
        name = "gattn" if i == 0 else "baseline"
        for cache in ("cold", "warm"):
            if cache == "cold":
                evict(folder)
            run_dir = "%s/run_%s_%s_%s" % (work, gb, name, cache)
            startup, total, last = run(binary, folder, run_dir)
            print("| %s | %s GB | %s | %.2f s | %.2f s | %s | %s | %s | %s |" % (
                name, gb, cache, startup, total, mib(last.get("VmHWM", 0)), mib(last["RssAnonPeak"]),
                mib(last.get("RssAnon", 0)), mib(last.get("RssFile", 0))), flush=True)
PY
