#!/bin/bash
# tp.sh on|off P N : shardline --smp 1 on CPU 0 with TLS on or off, redis-benchmark on CPU 1; CPU µs/req
set -u
TLS=$1; P=$2; N=$3
B=${REPO:-.}/target/release/shardline
D=${WORK:-/tmp/sl-bench}/tp; rm -rf $D; mkdir -p $D
PORT=$((20000 + RANDOM % 20000))
TA=""; [ $TLS = off ] && TA="--tls off"
taskset -c 0 $B --smp 1 --bind 127.0.0.1:$PORT --metrics-bind 127.0.0.1:0 --data-dir $D --appendonly no $TA > $D/log 2>&1 &
SP=$!
for i in $(seq 50); do grep -q "password:" $D/log 2>/dev/null && break; sleep 0.1; done
PW=$(grep -o "password: [^ ]*" $D/log | head -1 | cut -d' ' -f2)
CL="--user default -a $PW"; [ $TLS = on ] && CL="--tls --cacert $D/cert.pem $CL"
for i in $(seq 50); do redis-cli $CL -p $PORT ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
t() { awk '{print $14+$15}' /proc/$SP/stat; }
c0=$(t)
OUT=$(taskset -c 1 redis-benchmark $CL -p $PORT -c 50 -P $P -n $N -r 100000 -d 16 -t set,get -q 2>/dev/null | tr '\r' '\n' | grep "requests per second" | tail -2 | tr '\n' ' ')
c1=$(t)
printf "tls=%-3s P%-2s cpu_us/req=%6.2f  %s\n" $TLS $P $(echo "($c1-$c0)/100*1000000/(2*$N)" | bc -l) "$OUT"
kill $SP; wait $SP 2>/dev/null
