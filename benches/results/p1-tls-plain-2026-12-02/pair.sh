#!/bin/bash
# usage: pair.sh shardline|redis FSYNC(off|everysec|always) P N [extra shardline args]
# server on CPU 0, redis-benchmark on CPU 1; prints req/s and server CPU µs/req
set -u
WHO=$1; FS=$2; P=$3; N=$4; shift 4
B=${B:-/work/main/target/release}
D=${WORK:-/tmp/sl-bench}; rm -rf $D/data $D/r; mkdir -p $D/data $D/r
if [ ! -f $D/cert.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $D/key.pem -out $D/cert.pem -days 30 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
  echo pw | $B/shardline passwd default --users $D/users >/dev/null 2>&1
fi
for attempt in 1 2 3 4 5; do
PORT=$((20000 + RANDOM % 20000))
if [ $WHO = shardline ]; then
  AO="--appendonly yes --appendfsync $FS"; [ $FS = off ] && AO="--appendonly no"
  taskset -c 0 ${SLBIN:-$B/shardline} --smp 1 --bind 127.0.0.1:$PORT --metrics-bind 127.0.0.1:0 --tls-cert $D/cert.pem --tls-key $D/key.pem --users $D/users --data-dir $D/data $AO "$@" > $D/log 2>&1 &
else
  AO="--appendonly yes --appendfsync $FS"; [ $FS = off ] && AO="--appendonly no"
  taskset -c 0 redis-server --bind 127.0.0.1 --save '' --port 0 --tls-port $PORT --tls-cert-file $D/cert.pem --tls-key-file $D/key.pem --tls-ca-cert-file $D/cert.pem --tls-auth-clients no --dir $D/r $AO --user default on '>pw' '~*' '&*' '+@all' > $D/log 2>&1 &
fi
SP=$!
sleep 0.3; kill -0 $SP 2>/dev/null && break; done
for i in $(seq 50); do redis-cli --tls --cacert $D/cert.pem -p $PORT --user default --pass pw ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
t() { awk '{print $14+$15}' /proc/$SP/stat; }
c0=$(t); s0=$(date +%s.%N)
OUT=$(taskset -c 1 ${CW:-} redis-benchmark --tls --cacert $D/cert.pem -p $PORT --user default -a pw -c 50 -P $P -n $N -r 100000 -d 16 -t ${T:-set} -q 2>${CWERR:-/dev/null} | tr '\r' '\n' | grep "requests per second" | tail -1)
c1=$(t); s1=$(date +%s.%N)
RPS=$(echo "$OUT" | sed 's/.*: \([0-9.]*\) requests.*/\1/')
CPU=$(echo "($c1-$c0)/100" | bc -l)
WALL=$(echo "$s1-$s0" | bc -l)
printf "%-9s %-8s P%-2s rps=%9.0f cpu_us/req=%6.2f util=%.2f\n" $WHO $FS $P $RPS $(echo "$CPU*1000000/$N" | bc -l) $(echo "$CPU/$WALL" | bc -l)
if [ $WHO = shardline ]; then M=$(grep -o "metrics on http://[0-9.:]*" $D/log | head -1 | sed "s/metrics on //"); curl -s $M/metrics | awk '/^shardline_aof_fsynced_records_total/{r+=$2} /^shardline_aof_fsync_duration_seconds_count/{c+=$2} /^shardline_aof_fsync_duration_seconds_sum/{s+=$2} END{if(c>0) printf "  fsyncs=%d records/fsync=%.1f mean_fsync_us=%.0f\n", c, r/c, s/c*1e6}'; fi
[ -n "${KEEP:-}" ] && { echo $SP > $D/pid; exit 0; }
kill $SP; wait $SP 2>/dev/null
