# shellcheck shell=bash
# Helpers of the csi probe tests: the stand-in CSI plugin csi_plugin.py (a
# real gRPC server, python3-grpcio).  Source after lib.sh.

# Debian's python3-grpcio is for the system's python3.
CSI_PYTHON=${CSI_PYTHON:-/usr/bin/python3}
CSI_PLUGIN=$PLUGFS_SOURCE_DIR/tests/integration/csi_plugin.py
"$CSI_PYTHON" -c 'import grpc' 2>/dev/null ||
	die "python3-grpcio is missing for $CSI_PYTHON (contrib/install-deps.sh installs it)"

# csi_plugin_copy: prints the path of a copy of csi_plugin.py in $T that
# any user may read, for a plugin run as another user (the source tree may
# be in a directory only root can enter, such as a clone in a mktemp -d).
csi_plugin_copy() {
	[ -e "$T/csi_plugin.py" ] || install -m 0644 "$CSI_PLUGIN" "$T/csi_plugin.py" || return 1
	echo "$T/csi_plugin.py"
}

# csi_plugin SOCKET [ARGS...]: csi_plugin.py serving SOCKET in the
# background (killed by the EXIT trap), waits (30 s) until the socket
# exists.  Sets CSI_PID.
csi_plugin() {
	local sock=$1
	shift
	mkdir -p "$(dirname "$sock")"
	"$CSI_PYTHON" "$CSI_PLUGIN" --socket "$sock" "$@" >>"$T/csi-plugin.log" 2>&1 &
	CSI_PID=$!
	_PIDS+=("$CSI_PID")
	wait_until --pid "$CSI_PID" 30 "the csi plugin listens on $sock" test -S "$sock" || exit 1
}

# csi_hang SOCKET...: one process that listens on every SOCKET, accepts and
# never answers.  Sets CSI_PID.
csi_hang() {
	local s
	for s in "$@"; do mkdir -p "$(dirname "$s")"; done
	"$CSI_PYTHON" "$CSI_PLUGIN" --hang "$@" >>"$T/csi-plugin.log" 2>&1 &
	CSI_PID=$!
	_PIDS+=("$CSI_PID")
	wait_until --pid "$CSI_PID" 30 "the hung plugin listens" test -S "${@: -1}" || exit 1
}
