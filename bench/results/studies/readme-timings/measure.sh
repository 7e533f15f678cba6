#!/bin/bash
# Times the README's agent run against a served, seeded store, and a later start of the server.
set -u
cd /work/wt-hostile
STORE=/tmp/readme/store; rm -rf $STORE
PORT=18777
t0=$(date +%s.%N)
.venv/bin/tunemem serve --seed --port $PORT --data-dir $STORE > /tmp/readme/serve1.log 2>&1 &
PID=$!
until curl -sf localhost:$PORT/healthz >/dev/null; do sleep 0.2; done
t1=$(date +%s.%N)
echo "first_start_s $(echo "$t1 - $t0" | bc)"
for i in 1 2 3; do
  a=$(date +%s.%N)
  .venv/bin/tunemem agent run --task tunemem/ingest/samples/targets/convolution --chip w6600 --budget 20 --url http://127.0.0.1:$PORT > /tmp/readme/agent$i.log 2>&1
  rc=$?
  b=$(date +%s.%N)
  echo "agent_run_s $i $(echo "$b - $a" | bc) rc=$rc"
done
a=$(date +%s.%N)
.venv/bin/tunemem lessons top --chip w6600 --url http://127.0.0.1:$PORT > /tmp/readme/top.log 2>&1
b=$(date +%s.%N)
echo "lessons_top_s $(echo "$b - $a" | bc)"
kill -INT $PID; wait $PID
uptime
