#!/usr/bin/env bash
# One device call for issue 39 (docs/history/gpu-runbook.md): the CUDA figures first, alone on the GPU, then four
# training runs side by side on it for a fixed wall time, each run's best checkpoint exported by
# `tools/gpu_run.py train --best-by` and brought back as one tar in $OUT (a call brings back 8 files at most).
#
#   MINUTES=6.5 bash tools/gpu_session.sh          # on the device machine, from the repository root
#   DEVICE=cpu MINUTES=1 TINY=1 bash tools/gpu_session.sh   # the same chain here on the CPU, small, to test it
#
# Needs gpu_job/languages and gpu_job/english (`tools/gpu_run.py pack`, carried).
set -u
MINUTES=${MINUTES:-6.5}
DEVICE=${DEVICE:-auto}
WORKERS=${WORKERS:-3}
OUT=${OUT:?set OUT to the folder that comes back}
PY=${PY:-python3}
export PYTHONUNBUFFERED=1
EXPORTS=${EXPORTS:-/tmp/gpu_exports}
LOGS=${LOGS:-/tmp/gpu_logs}
rm -rf "$EXPORTS" "$LOGS"
mkdir -p "$EXPORTS" "$LOGS" "$OUT"

command -v nvidia-smi >/dev/null && nvidia-smi -L
if [ -n "${TINY:-}" ]; then
    $PY bench/cuda_bench.py --repeats 3 --out "$OUT/cuda.json" >"$LOGS/cuda.log" 2>&1
else
    $PY bench/cuda_bench.py --out "$OUT/cuda.json" >"$LOGS/cuda.log" 2>&1
fi
echo "cuda_bench exit $?"; tail -c 1500 "$LOGS/cuda.log"

LANG_BEST=de_Latn,fr_Latn,es_Latn
D5="--weight training_german_DE=0.5 --weight training_french_FR=0.5 --weight training_spanish_ES=0.5"
if [ -n "${TINY:-}" ]; then
    SIZE_L="--embed 64 --hidden 768 --layers 1 --batch-size 16 --seq-len 32 --val-chars 2000"
    SIZE_E="--embed 64 --hidden 768 --layers 1 --batch-size 16 --seq-len 32 --val-chars 2000"
else
    SIZE_L="--embed 64 --hidden 768 --layers 1 --batch-size 256 --seq-len 128"
    SIZE_E="--embed 64 --hidden 768 --layers 1 --batch-size 512 --seq-len 128"
fi

train() {  # name, then gpu_run.py train's options
    local name=$1
    shift
    $PY tools/gpu_run.py train --out "$EXPORTS" --run-name "$name" --minutes "$MINUTES" --device "$DEVICE" \
        --workers "$WORKERS" --eval-seconds 30 --warmup 100 --decay-frac 0.3 "$@" >"$LOGS/$name.log" 2>&1
    echo "$name exit $?" >>"$LOGS/exits.log"
}

bundle() {  # each run's export as one tar, and the logs as one, written beside and moved into $OUT
    for dir in "$EXPORTS"/*/; do
        [ -f "$dir/checkpoint.json" ] || continue
        local name
        name=$(basename "$dir")
        tar -cf "/tmp/$name.tar" -C "$EXPORTS" "$name" && mv -f "/tmp/$name.tar" "$OUT/$name.tar"
    done
    tar -cf /tmp/logs.tar -C "$LOGS" . && mv -f /tmp/logs.tar "$OUT/logs.tar"
}

# the multilingual model (de, fr, es; 1x768 as served): from the shipped run's weights, and from the English model
# as that run began, each with dropout, the aac/ sentences weighted above Dasher 5's texts
train lang-ckpt-d25 --shard gpu_job/languages --init-from models/checkpoints/languages-de-fr-es $SIZE_L --lr 1e-3 \
    --dropout 0.25 --lowercase-frac 0 $D5 --best-by $LANG_BEST &
train lang-en-d20 --shard gpu_job/languages --init-from models/english-lstm $SIZE_L --lr 2e-3 \
    --dropout 0.2 --lowercase-frac 0 $D5 --best-by $LANG_BEST --seed 1 &
train lang-en-d40 --shard gpu_job/languages --init-from models/english-lstm $SIZE_L --lr 2e-3 \
    --dropout 0.4 --lowercase-frac 0 $D5 --best-by $LANG_BEST --seed 2 &
# English 1x768 (as served) from the shipped model, on the whole English mix, with light dropout
train english-d10 --shard gpu_job/english --init-from models/english-lstm $SIZE_E --lr 5e-4 \
    --dropout 0.1 --lowercase-frac 0.2 --best-by overall --seed 3 &

while [ -n "$(jobs -r)" ]; do
    sleep 40
    bundle
done
wait
bundle
cat "$LOGS/exits.log"
for log in "$LOGS"/*.log; do
    case $log in */cuda.log|*/exits.log) continue ;; esac
    echo "== $(basename "$log")"
    grep -E "timed|probe|done:|Error|error|Traceback" "$log" | head -8
    sed -n '/validation curve/,$p' "$log" | tail -n 14 | cut -c1-150
done
ls -la "$OUT"
