#!/usr/bin/env bash
# The README's demo: one job on the local provider that recovers twice from
# a listed exit code and succeeds, then the queue and the job's attempts.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
SORTIE=${SORTIE:-sortie}
export SORTIE_HOME=${SORTIE_HOME:-$(mktemp -d /tmp/sortie-demo.XXXXXX)}
export SORTIE_POLL_INTERVAL=${SORTIE_POLL_INTERVAL:-500ms}
export SORTIE_RESTART_BACKOFF_INITIAL=${SORTIE_RESTART_BACKOFF_INITIAL:-1s}
trap '"$SORTIE" controller stop >/dev/null 2>&1 || true' EXIT
echo "SORTIE_HOME=$SORTIE_HOME"
echo "\$ sortie jobs launch $here/recover.yaml"
"$SORTIE" jobs launch "$here/recover.yaml"
echo
echo "\$ sortie jobs queue"
"$SORTIE" jobs queue
echo
echo "\$ sortie jobs show 1"
"$SORTIE" jobs show 1
