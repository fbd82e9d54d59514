#!/usr/bin/env bash
# The server's memory around one large artifact: `agentstate serve` (release build, SQLite, payloads
# in files under --artifacts-dir) is sent one save of SIZE bytes (default 50,000,000) through
# adk api_server's save route (base64 in JSON, as ADK's clients send it) and asked for it back;
# prints its resident memory before, after, and at its peak (the kernel's VmHWM) during the save
# and, reset in between (`clear_refs`), during the load.
#
#   cargo build --release -p agentstate-server && bash bench/artifact_memory.sh [SIZE]
#
# STORE=sqlite keeps the payload in the database instead (no --artifacts-dir). MODE=raw sends the
# bytes themselves (POST …/artifacts/NAME) and reads them back with ?alt=media.
set -euo pipefail
size="${1:-50000000}"
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/target/release/agentstate"
dir="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
files=(--artifacts-dir "$dir/files")
[ "${STORE:-files}" = sqlite ] && files=()
"$bin" serve --db "sqlite://$dir/index.db" "${files[@]}" --addr "127.0.0.1:$port" \
  --max-artifact-bytes $((size + 1000000)) 2>"$dir/log" &
pid=$!
for _ in $(seq 100); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
python3 - "$size" "$dir/body.json" "$dir/body.bin" <<'PY'
import base64, json, random, sys
size, path, raw = int(sys.argv[1]), sys.argv[2], sys.argv[3]
payload = random.Random(1).randbytes(size)
open(raw, "wb").write(payload)
data = base64.urlsafe_b64encode(payload).decode()
with open(path, "w") as f:
    json.dump({"filename": "big.bin", "artifact": {"inlineData": {"mimeType": "application/octet-stream", "data": data}}}, f)
PY
rss() { awk -v k="$1" '$1 == k":" {printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status"; }
mode="${MODE:-json}"
if [ "$mode" = raw ]; then
  echo "body: the $size bytes themselves"
else
  echo "body: $(stat -c %s "$dir/body.json") bytes of JSON for a $size-byte artifact"
fi
echo "before: $(rss VmRSS)"
url="127.0.0.1:$port/apps/bench/users/u/sessions/s/artifacts"
start=$(date +%s.%N)
if [ "$mode" = raw ]; then
  curl -sf -X POST "$url/big.bin" -H 'content-type: application/octet-stream' --data-binary "@$dir/body.bin" >/dev/null
else
  curl -sf -X POST "$url" -H 'content-type: application/json' --data-binary "@$dir/body.json" >/dev/null
fi
saved=$(date +%s.%N)
save_peak="$(rss VmHWM)"
echo 5 > "/proc/$pid/clear_refs"
saved=$(date +%s.%N)
if [ "$mode" = raw ]; then
  curl -sf "$url/big.bin?alt=media" -o "$dir/back.bin"
  loaded=$(date +%s.%N)
  cmp -s "$dir/body.bin" "$dir/back.bin" || { echo "the artifact came back changed"; exit 1; }
else
  curl -sf "$url/big.bin" -o "$dir/back.json"
  loaded=$(date +%s.%N)
  python3 - "$dir/body.json" "$dir/back.json" <<'PY'
import json, sys
sent, back = (json.load(open(p)) for p in sys.argv[1:3])
assert back["inlineData"]["data"] == sent["artifact"]["inlineData"]["data"], "the artifact came back changed"
PY
fi
echo "save: $(python3 -c "print(f'{($saved - $start) * 1000:.0f} ms')"), load: $(python3 -c "print(f'{($loaded - $saved) * 1000:.0f} ms')")"
echo "after: $(rss VmRSS), peak during the save: $save_peak, during the load: $(rss VmHWM)"
[ -d "$dir/files" ] && echo "files: $(find "$dir/files" -type f | wc -l), $(du -sb "$dir/files" | cut -f1) bytes"
true
