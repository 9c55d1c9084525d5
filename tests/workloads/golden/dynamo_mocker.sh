#!/usr/bin/env bash
# cloudai job dynamo_mocker.base.0
cd __OUTPUT_DIR__/output
export CLOUDAI_HEAD_NODE="$(hostname)"
export SLURM_JOB_MASTER_NODE="$CLOUDAI_HEAD_NODE"
CLOUDAI_NODES=( "$CLOUDAI_HEAD_NODE" )
cloudai_bg_pids=()
cloudai_cleanup() {  # stop every background step, whatever ended the script
    local rc=$? pid i
    for pid in "${cloudai_bg_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for i in $(seq 1 30); do
        local alive=0
        for pid in "${cloudai_bg_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 1
    done
    for pid in "${cloudai_bg_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    return "$rc"
}
trap cloudai_cleanup EXIT
cloudai_wait_http() {  # URL TIMEOUT_S INTERVAL_S
    local end=$(( $(date +%s) + $2 ))
    while [ "$(date +%s)" -lt "$end" ]; do
        if curl -sf "$1" >/dev/null 2>&1; then echo "cloudai: $1 answers"; return 0; fi
        sleep "$3"
    done
    echo "cloudai: $1 did not answer within $2 s" >&2
    return 1
}

export HF_HOME=__OUTPUT_DIR__/install/huggingface
export HOME=__OUTPUT_DIR__/output/dynamo-home DYN_FILE_KV=__OUTPUT_DIR__/output/dynamo-kv DYN_DISCOVERY_BACKEND=file
mkdir -p "$HOME" "$DYN_FILE_KV"
export DYN_TCP_RPC_HOST=127.0.0.1 DYN_EVENT_PLANE_HOST=127.0.0.1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 TQDM_DISABLE=1 NO_COLOR=1
export CLOUDAI_HTTP_PORT="$(__OUTPUT_DIR__/install/dynamo-1.6.1/bin/python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"

__OUTPUT_DIR__/install/dynamo-1.6.1/bin/python -m dynamo.mocker --disaggregation-mode prefill --model-path Qwen/Qwen3-0.6B --num-workers 1 --speedup-ratio 1.0 --block-size 64 --num-gpu-blocks-override 256 --enable-prefix-caching --kv-transfer-bandwidth 200.0 --discovery-backend file --request-plane tcp --max-num-seqs 4 > dynamo_prefill_0.log 2>&1 &
PREFILL_0_PID=$!
cloudai_bg_pids+=("$PREFILL_0_PID")

__OUTPUT_DIR__/install/dynamo-1.6.1/bin/python -m dynamo.mocker --disaggregation-mode decode --model-path Qwen/Qwen3-0.6B --num-workers 1 --speedup-ratio 1.0 --block-size 64 --num-gpu-blocks-override 256 --enable-prefix-caching --kv-transfer-bandwidth 200.0 --discovery-backend file --request-plane tcp --max-num-seqs 16 > dynamo_decode_0.log 2>&1 &
DECODE_0_PID=$!
cloudai_bg_pids+=("$DECODE_0_PID")

cloudai_wait_ready() {  # LOG REGEX PID NAME
    until grep -qE -- "$2" "$1" 2>/dev/null; do
        kill -0 "$3" 2>/dev/null || { echo "cloudai: $4 exited before it was ready" >&2; return 1; }
        sleep 0.2
    done
}
cloudai_wait_ready dynamo_prefill_0.log 'created and running' "$PREFILL_0_PID" prefill_0 || exit 1
cloudai_wait_ready dynamo_decode_0.log 'created and running' "$DECODE_0_PID" decode_0 || exit 1

__OUTPUT_DIR__/install/dynamo-1.6.1/bin/python -m dynamo.frontend --http-port "$CLOUDAI_HTTP_PORT" --router-mode kv --discovery-backend file --request-plane tcp --no-router-kv-events > dynamo_frontend.log 2>&1 &
FRONTEND_PID=$!
cloudai_bg_pids+=("$FRONTEND_PID")

for _ in $(seq 1 1500); do curl -sf "http://localhost:${CLOUDAI_HTTP_PORT}/v1/models" 2>/dev/null | grep -q '"id"' && grep -q 'Prefill router target activated' dynamo_frontend.log && break; kill -0 "$FRONTEND_PID" 2>/dev/null || break; sleep 0.2; done
curl -sf "http://localhost:${CLOUDAI_HTTP_PORT}/v1/models" 2>/dev/null | grep -q '"id"' && grep -q 'Prefill router target activated' dynamo_frontend.log || { echo "cloudai: no model registered at http://localhost:${CLOUDAI_HTTP_PORT}/v1/models" >&2; exit 1; }

__OUTPUT_DIR__/install/dynamo-1.6.1/bin/aiperf profile --model Qwen/Qwen3-0.6B --url "localhost:${CLOUDAI_HTTP_PORT}" --endpoint-type chat --streaming --artifact-dir __OUTPUT_DIR__/output/aiperf_artifacts --no-server-metrics --synthetic-input-tokens-mean 128 --output-tokens-mean 32 --request-count 50 --concurrency 10 --warmup-request-count 5 --random-seed 42 --output-tokens-stddev 16 > aiperf.log 2>&1 || exit $?

report=$(find __OUTPUT_DIR__/output/aiperf_artifacts -maxdepth 1 -name profile_export_aiperf.csv -print -quit)
[ -n "$report" ] && cp "$report" __OUTPUT_DIR__/output/benchmark_report.csv
