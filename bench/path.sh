#!/usr/bin/env bash
# `npm run bench:path`: the whole path (HTTP in, journal, route, claim, an `openai` pipeline call
# to a mock model, history, delivery, status) beside a one-hop floor gateway, measured by the
# bench-peers harness, which lives outside this repository. BENCH_PEERS_DIR names its folder
# (the one holding compare.sh); compare.sh's own variables (SB_STORE, WORKLOADS, DELAY_MS…) pass
# through. It builds, then starts this checkout's apps/gateway/dist/cli.js.
set -euo pipefail
if [ -z "${BENCH_PEERS_DIR:-}" ]; then
  echo "bench:path: BENCH_PEERS_DIR is not set; set it to the bench-peers folder (the one holding compare.sh)" >&2
  exit 2
fi
if [ ! -x "$BENCH_PEERS_DIR/compare.sh" ]; then
  echo "bench:path: no executable compare.sh in BENCH_PEERS_DIR ($BENCH_PEERS_DIR)" >&2
  exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npm run build
SB_REPO=$PWD exec "$BENCH_PEERS_DIR/compare.sh"
