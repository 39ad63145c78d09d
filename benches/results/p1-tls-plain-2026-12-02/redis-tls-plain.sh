#!/bin/bash
# rtp.sh on|off P N : redis-server on CPU 0 with TLS or plain, redis-benchmark on CPU 1
TLS=$1; P=$2; N=$3; D=${WORK:-/tmp/sl-bench}; rm -rf $D/r; mkdir -p $D/r
PORT=$((20000 + RANDOM % 20000))
if [ $TLS = on ]; then SA="--port 0 --tls-port $PORT --tls-cert-file $D/cert.pem --tls-key-file $D/key.pem --tls-ca-cert-file $D/cert.pem --tls-auth-clients no"; CL="--tls --cacert $D/cert.pem"; else SA="--port $PORT"; CL=""; fi
taskset -c 0 redis-server --bind 127.0.0.1 --save '' $SA --dir $D/r --appendonly no --user default on '>pw' '~*' '&*' '+@all' > $D/rlog 2>&1 &
SP=$!
for i in $(seq 50); do redis-cli $CL -p $PORT --user default --pass pw ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
t() { awk '{print $14+$15}' /proc/$SP/stat; }
c0=$(t)
taskset -c 1 redis-benchmark $CL -p $PORT --user default -a pw -c 50 -P $P -n $N -r 100000 -d 16 -t set,get -q >/dev/null 2>&1
c1=$(t)
printf "redis tls=%-3s P%-2s cpu_us/req=%6.2f\n" $TLS $P $(echo "($c1-$c0)/100*1000000/(2*$N)" | bc -l)
kill $SP; wait $SP 2>/dev/null
