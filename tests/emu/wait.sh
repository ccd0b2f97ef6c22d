# SPDX-License-Identifier: MIT
# Sourced by the emu suites: waits that end on what they wait for.
# wait_ready FILE PID: until FILE says ready, or PID is gone. A hang guard
# of 2 minutes, not a bound on a boot's speed (issue 35: a loaded 2-core
# machine took over 10 s).
wait_ready() {
	local i
	for i in $(seq 1200); do
		grep -q ready "$1" 2>/dev/null && return
		kill -0 "$2" 2>/dev/null || return
		sleep 0.1
	done
}
