#!/usr/bin/env bash
# The GPU check: the CubeCL kernels' parity tests and timings, and the colswarm command's
# annotate/train/pretrain on a real GPU through wgpu (Vulkan), on a machine that has a GPU
# driver but no Rust toolchain and no network.
#
#   scripts/gpu-check.sh pack tests|bench|cli   here (toolchain, network for Debian's packages):
#       builds the release binaries with `--features wgpu`, strips and xz-compresses them, and
#       puts them with the Vulkan loader and the glvnd libraries (without which NVIDIA's
#       Vulkan driver finds no adapter) in target/gpu-check/<part>.tar (8-20 MB).
#   scripts/gpu-check.sh run tests|bench|cli OUT    on the GPU machine, from a checkout carrying
#       target/gpu-check/<part>.tar: unpacks it, runs the part and writes every result to OUT.
#
# `tests`: the colswarm-kernels parity tests (CubeCL against the reference, forward and
# backward); `bench`: the criterion `cube` group (B=8, H=4, N=64, T=128/512/2048, and the language
# model shape B=8, T=4096, H=64). `cli`: annotate on wgpu against the CPU (the shipped model on
# the README table and on the first 100 T2D tables, every field compared; and a namespace
# fine-tuned there on the samples), and, unless GPU_CHECK_TRAINING=0, `train` and `pretrain`
# throughput on the CPU and on wgpu, with the shipped recipe and a d_model 256, 4-layer model.
# The parts travel separately (8-13 MB each), beside the checkout's files.
#   scripts/gpu-check.sh size [tests|bench|cli]   prints what a call would carry: the checkout's
#       files (tracked, and untracked ones git does not ignore) plus the packed parts named (all
#       packed parts when none is named), against the 64 MiB a lent machine takes. `pack` runs
#       the same check after packing and fails, saying what to leave out, when it would not fit.
#
# With RWKV_LM=<a clone of BlinkDL/RWKV-LM> (only its RWKV-v7/train_temp/cuda/wkv7_*_fp32.*
# files are read), `bench` also times the official CUDA kernel in the same session, through
# benches/peers/wkv7_official_cuda.py (needs PyTorch with CUDA and nvcc on the GPU machine).
# NVIDIA's Vulkan driver: VK_DRIVER_FILES defaults to where the lent machines mount it.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: $0 pack tests|bench|cli | $0 run tests|bench|cli OUT | $0 size [tests|bench|cli]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
action=$1 part=${2:-}
case $action:$part in size:) ;; *:tests | *:bench | *:cli) ;; *) usage ;; esac
dir=target/gpu-check
# What a lent machine takes in all: the working tree's copy and the carried parts.
limit_bytes=$((64 * 1024 * 1024))

# Prints the bytes a call would carry (checkout files + the named packed parts, or every packed
# part) and fails when they pass the limit.
carried_size() {
  local checkout parts=0 tar
  checkout=$(git ls-files -z --cached --others --exclude-standard |
    { xargs -0 stat -c %s 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%d", s }')
  local names=("$@")
  [ ${#names[@]} -gt 0 ] || names=(tests bench cli)
  for name in "${names[@]}"; do
    tar=$dir/$name.tar
    [ -f "$tar" ] && parts=$((parts + $(stat -c %s "$tar")))
  done
  local total=$((checkout + parts))
  awk -v c="$checkout" -v p="$parts" -v n="${names[*]}" -v l="$limit_bytes" 'BEGIN {
    m = 1048576; printf "carried: checkout %.1f MiB + parts (%s) %.1f MiB = %.1f MiB of %d MiB\n", c / m, n, p / m, (c + p) / m, l / m }'
  if [ "$total" -gt "$limit_bytes" ]; then
    echo "error: a GPU call would carry more than $((limit_bytes / 1048576)) MiB; remove untracked" \
      "files from the working tree (git status) or carry one part per call" >&2
    return 1
  fi
}
# The Vulkan loader and the glvnd set, from Debian's archive (their libraries only).
debs=(libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 libx11-6 libxcb1 libxau6
  libxdmcp6 libbsd0 libmd0)

# The executables a cargo command built (its JSON messages), one per line.
executables() {
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["executable"])'
}

pack() {
  local stage=$dir/$part
  rm -rf "$stage" && mkdir -p "$stage/bin"
  export CARGO_TERM_COLOR=never
  case $part in
    tests)
      cargo test --release -p colswarm-kernels --features wgpu --lib --no-run \
        --message-format=json | executables | while read -r exe; do
        cp "$exe" "$stage/bin/kernel-tests"
      done
      ;;
    bench)
      cargo bench -p colswarm-kernels --features wgpu --bench kernels --no-run \
        --message-format=json | executables | while read -r exe; do
        cp "$exe" "$stage/bin/kernel-bench"
      done
      ;;
    cli)
      cargo build --release -p colswarm-cli --features wgpu
      cp target/release/colswarm "$stage/bin/colswarm"
      ;;
  esac
  strip "$stage"/bin/*
  xz -9e -T0 "$stage"/bin/*
  local debdir
  debdir=$(mktemp -d)
  (cd "$debdir" && apt-get download "${debs[@]}" >/dev/null 2>&1)
  for deb in "$debdir"/*.deb; do dpkg-deb -x "$deb" "$debdir/root"; done
  mkdir -p "$stage/lib" && cp -a "$debdir"/root/usr/lib/x86_64-linux-gnu/*.so* "$stage/lib/"
  tar -C "$stage" -cJf "$stage/lib.tar.xz" lib && rm -rf "$stage/lib"
  rm -rf "$debdir"
  tar -C "$dir" -cf "$dir/$part.tar" "$part"
  rm -rf "$stage"
  ls -l "$dir/$part.tar"
  carried_size "$part"
}

run() {
  local out=$1
  mkdir -p "$out"
  local work
  work=$(mktemp -d)
  tar -C "$work" -xf "$dir/$part.tar"
  tar -C "$work/$part" -xJf "$work/$part/lib.tar.xz"
  xz -d "$work/$part"/bin/*.xz
  chmod +x "$work/$part"/bin/*
  export LD_LIBRARY_PATH="$work/$part/lib:${LD_LIBRARY_PATH:-}"
  export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  local bin=$work/$part/bin
  (nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true) >"$out/gpu.txt" 2>&1
  case $part in
    tests)
      # Parity first: a timing of a wrong kernel is worth nothing.
      "$bin/kernel-tests" --test-threads 1 >"$out/kernel-tests.txt" 2>&1 || echo "kernel tests FAILED" >>"$out/kernel-tests.txt"
      ;;
    bench)
      # Whether a PyTorch with CUDA is at hand for the official kernel's timings.
      { python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' || true
        command -v nvcc || echo "no nvcc"; } >"$out/peers.txt" 2>&1
      CRITERION_HOME="$out/criterion" "$bin/kernel-bench" --bench cube --noplot >"$out/kernel-bench.txt" 2>&1 || echo "bench FAILED" >>"$out/kernel-bench.txt"
      # The official CUDA kernel in the same session, where a clone of RWKV-LM is at hand.
      if [ -n "${RWKV_LM:-}" ]; then
        python3 benches/peers/wkv7_official_cuda.py --rwkv-lm "$RWKV_LM" >"$out/official.txt" 2>&1 ||
          echo "official kernel FAILED" >>"$out/official.txt"
      fi
      ;;
    cli)
      cli_check "$bin/colswarm" "$out"
      ;;
  esac
  rm -rf "$work"
  tail -n 40 "$out"/*.txt
}

# annotate on wgpu vs the CPU; train and pretrain throughput on both.
cli_check() {
  local colswarm=$1 out=$2 runs
  runs=$(mktemp -d)
  local table=datasets/t2d-webtables/samples/77632062_0_2292892375652659825.csv
  # bench reads a folder of table files: T2D's, out of its archive.
  local t2d=$runs/t2d
  mkdir -p "$t2d" && tar -C "$t2d" -xzf datasets/t2d-webtables/t2d.tar.gz
  for device in cpu wgpu; do
    "$colswarm" annotate --model models/colswarm-small --device "$device" --output csv "$table" \
      >"$out/annotate-$device.csv" 2>>"$out/annotate.txt" || echo "annotate on $device FAILED" >>"$out/annotate.txt"
    "$colswarm" bench --model models/colswarm-small --device "$device" "$t2d/tables" \
      >>"$out/bench.txt" 2>&1 || echo "bench on $device FAILED" >>"$out/bench.txt"
  done
  # Every field of the annotations of the first 100 T2D tables, on both devices: the labels,
  # abstentions, relations and router decisions alike, the confidences and gates within 1e-5.
  mkdir -p "$runs/first100"
  find "$t2d/tables" -name '*.csv' | sort | head -n 100 | xargs cp -t "$runs/first100"
  for device in cpu wgpu; do
    "$colswarm" annotate --model models/colswarm-small --device "$device" "$runs/first100" \
      >"$runs/first100-$device.json" 2>>"$out/annotate.txt" || echo "annotate of 100 tables on $device FAILED" >>"$out/annotate.txt"
  done
  python3 - "$runs/first100-cpu.json" "$runs/first100-wgpu.json" >"$out/parity.txt" 2>&1 <<'PY' || echo "parity FAILED" >>"$out/parity.txt"
import json, sys
def fields(value, path=""):
    if isinstance(value, dict):
        for key in sorted(value):
            yield from fields(value[key], f"{path}/{key}")
    elif isinstance(value, list):
        yield ("len", path), len(value)
        for i, item in enumerate(value):
            yield from fields(item, f"{path}/{i}")
    else:
        yield ("value", path), value
def load(path):
    text = open(path).read().strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
cpu, gpu = (dict(fields(load(p))) for p in sys.argv[1:])
# A field only one side has (a label list of another length) counts as unequal.
floats = {k for k in cpu.keys() & gpu.keys() if isinstance(cpu[k], float) and isinstance(gpu[k], float)}
others = sorted((cpu.keys() | gpu.keys()) - floats)
unequal = [k[1] for k in others if cpu.get(k) != gpu.get(k)]
worst = max((abs(cpu[k] - gpu[k]), k[1]) for k in floats) if floats else (0.0, "")
print(f"{len(others)} other fields, {len(unequal)} unequal {unequal[:5]}; "
      f"{len(floats)} numbers, largest difference {worst[0]:.2e} at {worst[1]}")
assert not unequal and worst[0] <= 1e-5
PY
  # A namespace fine-tuned here on the CPU, annotated on both: the added head runs where the
  # model runs.
  "$colswarm" fine-tune --tables datasets/t2d-webtables/samples --labels datasets/own-types/labels.csv \
    --namespace mine --out "$runs/mine" --quiet >"$out/fine-tune.txt" 2>&1 || echo "fine-tune FAILED" >>"$out/fine-tune.txt"
  for device in cpu wgpu; do
    "$colswarm" annotate --model "$runs/mine" --namespace mine --device "$device" --output csv \
      datasets/t2d-webtables/samples >"$out/fine-tuned-$device.csv" 2>>"$out/fine-tune.txt" ||
      echo "annotate with the fine-tuned namespace on $device FAILED" >>"$out/fine-tune.txt"
  done
  # GPU_CHECK_TRAINING=0 stops here (annotation only: a few minutes of device time).
  if [ "${GPU_CHECK_TRAINING:-1}" = 0 ]; then
    rm -rf "$runs"
    return
  fi
  # The shipped recipe (its defaults) and a d_model 256, 4-layer model, one epoch each on T2D.
  for device in cpu wgpu; do
    for shape in recipe d256; do
      local extra=()
      [ "$shape" = d256 ] && extra=(--set model.d_model=256 --set model.n_layers=4)
      { time timeout 200 "$colswarm" train --device "$device" --epochs 1 --max-tables 200 \
        --train t2d=t2d:datasets/t2d-webtables/t2d.tar.gz#train --out "$runs/$device-$shape" "${extra[@]}"; } \
        >>"$out/train-$device-$shape.txt" 2>&1 || echo "train on $device FAILED" >>"$out/train-$device-$shape.txt"
      cp "$runs/$device-$shape/log.jsonl" "$out/train-$device-$shape.log.jsonl" 2>/dev/null || true
    done
  done
  # pretrain's gazetteer objective on throwaway gazetteers: the key columns of T2D's tables,
  # grouped by the tables' DBpedia class (not for shipping: only its speed is measured).
  python3 - "$runs/corpus" "$t2d" <<'PY'
import csv, json, os, sys
from collections import defaultdict
corpus, root = sys.argv[1], sys.argv[2]
os.makedirs(f"{corpus}/gazetteers")
entries = defaultdict(set)
with open(f"{root}/classes_complete.csv", newline="", encoding="utf-8") as f:
    for table, label, _, key, *_ in csv.reader(f):
        path = f"{root}/tables/{table.split('.')[0]}.csv"
        if not key.isdigit() or not os.path.exists(path):
            continue
        with open(path, newline="", encoding="utf-8") as t:
            for row in list(csv.reader(t))[1:]:
                if int(key) < len(row) and row[int(key)].strip():
                    entries[label.lower()].add(row[int(key)].strip().replace("\n", " "))
index = {}
for name, values in sorted(entries.items()):
    if len(values) >= 20 and name.isalnum():
        open(f"{corpus}/gazetteers/{name}.txt", "w").write("\n".join(sorted(values)) + "\n")
        index[name] = {"count": len(values), "ship": True}
json.dump(index, open(f"{corpus}/gazetteers/index.json", "w"))
PY
  for device in cpu wgpu; do
    for shape in recipe d256; do
      local extra=()
      [ "$shape" = d256 ] && extra=(--d-model 256 --layers 4)
      { time timeout 200 "$colswarm" pretrain --device "$device" --objective gazetteer --corpus "$runs/corpus" \
        --steps 30 --eval-every 0 --out "$runs/pretrain-$device-$shape" "${extra[@]}"; } \
        >>"$out/pretrain-$device-$shape.txt" 2>&1 || echo "pretrain on $device FAILED" >>"$out/pretrain-$device-$shape.txt"
      cp "$runs/pretrain-$device-$shape/log.jsonl" "$out/pretrain-$device-$shape.log.jsonl" 2>/dev/null || true
    done
  done
  rm -rf "$runs"
}

case $action in
  pack) pack ;;
  size) carried_size ${part:+"$part"} ;;
  run)
    [ $# -eq 3 ] || usage
    run "$3"
    ;;
  *) usage ;;
esac
