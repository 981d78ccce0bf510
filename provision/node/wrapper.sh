# sortie task wrapper: runs one task's setup and run phases on this node,
# detached from whoever started it, and records the outcome exactly once.
# Usage: bash wrapper.sh NODE_DIR (absolute). Start writes env, cwd, run.sh
# and, when the task has one, setup.sh beside this file before starting it.
D=$1
# As under nohup, for the wrapper and every process of the task.
trap '' HUP
cd "$D" || exit 1

# put writes a small file so that readers see the old content or the new,
# never a part of it, and the new content survives a crash of the node.
put() {
	printf '%s\n' "$2" >"$D/$1.tmp" || return 1
	sync "$D/$1.tmp" 2>/dev/null
	mv -f "$D/$1.tmp" "$D/$1"
}

# mark writes a process id as put does, but not durably: a pid or a process
# group means nothing once the node restarts, and a file that a crash left
# empty or missing reads as no process, which is then the truth. With no
# room for the bytes (a full disk) an empty file, which needs none, carries
# the number in its name (NAME.is.N): a live wrapper whose pid could not be
# written must not be taken for a dead one.
mark() {
	if printf '%s\n' "$2" >"$D/$1.tmp" 2>/dev/null && mv -f "$D/$1.tmp" "$D/$1"; then
		return 0
	fi
	rm -f "$D/$1.tmp" 2>/dev/null
	: >"$D/$1.is.$2"
}

# The first wrapper to create begun owns the node: one that a repeated Start
# began (finishing a start a dead controller left half done) while another
# already runs ends here. An empty file needs no data block, so a full disk
# does not stop the claim; failing to make it begins nothing.
if ! (set -C && : >"$D/begun") 2>/dev/null; then
	exit 0
fi
mark pid "$$"
# Start waits until this pipe, if it gave one, is closed.
exec 3>&-
# As $(cat cwd) would, without a process: the whole file, less trailing newlines.
IFS= read -r -d '' W <"$D/cwd"
while [[ $W == *$'\n' ]]; do W=${W%$'\n'}; done

# phase runs setup.sh or run.sh in a session and process group of its own, so
# Stop and the local provider can signal the whole phase without reaching
# this wrapper, which must live on to record the exit code.
phase() {
	put phase "$1"
	# A stop requested before the phase began: do not begin it.
	if [ -e "$D/stop" ]; then
		return 143
	fi
	# Positional arguments carry the paths: the task's env file cannot change them.
	if [ -e "$D/container.sh" ]; then
		# In the task's container image (image_id: docker:IMAGE).
		setsid "$BASH" "$D/container.sh" "$D" "$W" "$1" >>"$D/log" 2>&1 </dev/null &
	else
		setsid "$BASH" -c 'cd -- "$1" || exit 1; . "$0/env" || exit 1; exec "$3" "$0/$2.sh"' \
			"$D" "$W" "$1" "$BASH" >>"$D/log" 2>&1 </dev/null &
	fi
	local pg=$!
	mark "pgid.$1" "$pg"
	wait "$pg"
	local code=$?
	if [ -e "$D/container.sh" ]; then
		"$BASH" "$D/container.sh" "$D" "$W" "$1" rm </dev/null >/dev/null 2>&1
	fi
	return "$code"
}

# finish records the phase's exit code and whether a stop was asked before
# the phase ended ("stop") or not ("-"): a code that a stop caused is
# sortie's, but a task that ended before the stop keeps its own code even
# when the stop marker comes later.
finish() {
	local how=-
	[ -e "$D/stop" ] && how=stop
	if [ ! -e "$D/exit_code" ]; then
		if ! put exit_code "$1 $2 $how" 2>/dev/null; then
			# No room for the file's bytes (a full disk): an empty file
			# needs none, so its name carries the code; the log says so
			# if it can.
			: >"$D/exit_code.unwritten.$1.$2.$how" 2>/dev/null
			printf 'sortie: could not write the exit code (%s %s) on this node\n' "$1" "$2" >>"$D/log" 2>/dev/null
		fi
		sync "$D" 2>/dev/null
	fi
	exit 0
}

if [ -e "$D/setup.sh" ]; then
	phase setup
	code=$?
	if [ "$code" -ne 0 ]; then
		finish setup "$code"
	fi
fi
phase run
finish run $?
