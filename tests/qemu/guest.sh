# SPDX-License-Identifier: MIT
# Helpers for the plans tests/qemu/qemu_test.py writes; sourced by /init in
# the guest (busybox sh). Each check prints one line on fd 3:
#   R NAME RC MS MD5|ERR        stdout hashed (reads: compared on the host)
#   T NAME RC MS|ERR|OUT        stdout as text on one line (identify, steps)
#   S NAME {JSON}               the runtime's counters the command printed
#                               with --stats (gpuos.stats/1, docs/json.md)
# MS is the wall time in ms, ERR the first line on stderr that is not the
# host-mode notice or the counters. The host decides what each line must be.

now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
err1() {
	grep -v -e '^gpuos: host mode' -e '^gpuos: MPS: ' -e '^{"schema": "gpuos.stats/' \
		-e '^gpuos [a-z]*: \(counters\|service counters\|controller\) ' "$1" | head -n 1 | tr -d '\r|'
}
stats() { # NAME STDERR_FILE: its --stats JSON line, if any
	grep -m 1 '^{"schema": "gpuos.stats/' "$2" | tr -d '\r' | sed "s/^/S $1 /" >&3
}
md5() { md5sum < "$1" | cut -d' ' -f1; }

r() { # NAME CMD...: run, hash stdout
	_n=$1; shift
	_t0=$(now_ms)
	"$@" > /tmp/o 2> /tmp/e
	_rc=$?
	echo "R $_n $_rc $(($(now_ms) - _t0)) $(md5 /tmp/o)|$(err1 /tmp/e)" >&3
	stats "$_n" /tmp/e
}

rw() { # NAME WANT_MD5 CMD...: as r; when stdout does not hash to WANT_MD5, also
	# one "B NAME INDEX MD5" line per 4 KiB block of it (at most 2048), for the
	# host to name the blocks that differ (diagnosis of a wrong answer)
	_n=$1 _w=$2; shift 2
	_t0=$(now_ms)
	"$@" > /tmp/o 2> /tmp/e
	_rc=$?
	_m=$(md5 /tmp/o)
	echo "R $_n $_rc $(($(now_ms) - _t0)) $_m|$(err1 /tmp/e)" >&3
	stats "$_n" /tmp/e
	if [ "$_m" != "$_w" ]; then
		_sz=$(wc -c < /tmp/o)
		_k=0
		while [ $((_k * 4096)) -lt "$_sz" ] && [ $_k -lt 2048 ]; do
			echo "B $_n $_k $(dd if=/tmp/o bs=4096 skip=$_k count=1 2>/dev/null | md5sum | cut -d' ' -f1)" >&3
			_k=$((_k + 1))
		done
	fi
}

t() { # NAME CMD...: run, report stdout as text (its first 4000 bytes)
	_n=$1; shift
	_t0=$(now_ms)
	"$@" > /tmp/o 2> /tmp/e
	_rc=$?
	echo "T $_n $_rc $(($(now_ms) - _t0))|$(err1 /tmp/e)|$(tr '\n|' '  ' < /tmp/o | head -c 4000)" >&3
	stats "$_n" /tmp/e
}

_bg=""
b() { # NAME CMD...: start in the background; collect reports them all
	_n=$1; shift
	( _t0=$(now_ms); "$@" > "/tmp/$_n.o" 2> "/tmp/$_n.e"; echo "$? $(($(now_ms) - _t0))" > "/tmp/$_n.rc" ) &
	_bg="$_bg $_n:$!"
}
collect() {
	for _x in $_bg; do
		_n=${_x%%:*}
		wait "${_x##*:}"
		# shellcheck disable=SC2046 # "RC MS": two words on purpose
		set -- $(cat "/tmp/$_n.rc")
		echo "R $_n $1 $2 $(md5 "/tmp/$_n.o")|$(err1 "/tmp/$_n.e")" >&3
		stats "$_n" "/tmp/$_n.e"
		rm -f "/tmp/$_n.o" "/tmp/$_n.e" "/tmp/$_n.rc"
	done
	_bg=""
}

svc_start() { # NAME KEY SOCKET CMD...: start a gpuos service, wait for "ready"
	_n=$1 _k=$2 _s=$3; shift 3
	_t0=$(now_ms)
	"$@" --socket "$_s" > "/tmp/$_k.svc.o" 2> "/tmp/$_k.svc.e" &
	eval "_svc_$_k=$!"
	_i=0 _rc=1
	while [ $_i -lt 1200 ]; do
		grep -q '^ready' "/tmp/$_k.svc.o" 2>/dev/null && { _rc=0; break; }
		kill -0 "$(eval echo "\$_svc_$_k")" 2>/dev/null || break
		sleep 0.05
		_i=$((_i + 1))
	done
	echo "T $_n $_rc $(($(now_ms) - _t0))|$(err1 "/tmp/$_k.svc.e")|$(tr '\n|' '  ' < "/tmp/$_k.svc.o")" >&3
}

svc_stop() { # NAME KEY SOCKET: gpuos stop, then the service's own exit status
	_n=$1 _k=$2 _s=$3
	_t0=$(now_ms)
	gpuos stop --socket "$_s" > /dev/null 2>&1
	wait "$(eval echo "\$_svc_$_k")"
	_rc=$?
	echo "T $_n $_rc $(($(now_ms) - _t0))|$(grep -v -e '^gpuos: host mode' -e '^gpuos: serving' -e '^gpuos: MPS: ' "/tmp/$_k.svc.e" | head -n 1)|" >&3
}

wait_disks() { # N: wait until N NVMe namespaces show up (after modprobe nvme)
	_i=0
	while [ "$(ls -d /sys/block/nvme* 2>/dev/null | wc -l)" -lt "$1" ] && [ $_i -lt 200 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	ls -d /sys/block/nvme* | wc -l
}

nvme_up() { # N: load the kernel's nvme driver, wait for N namespaces
	modprobe nvme && wait_disks "$1"
}

mount_minix() { # the namespace that holds a minix file system, at /mnt
	for _d in /dev/nvme*n1; do
		mount -t minix -o ro "$_d" /mnt 2>/dev/null && { echo "$_d"; return 0; }
	done
	return 1
}
