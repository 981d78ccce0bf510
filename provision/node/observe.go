package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// pollBody asks the node's agent (agent.Answer): one call per node per
// check. A node without an agent link has not started.
const pollBody = `
[ -d "$D" ] || exit 0
[ -x "$D/agent" ] || exit 0
exec "$D/agent" status "$D"
`

// Poll reports the task's state on the node behind r, in one Exec.
func Poll(ctx context.Context, r provision.Runner) (Status, error) {
	out, err := r.Exec(ctx, script(pollBody, "D", r.Dir()), nil)
	if err != nil {
		return Status{}, fmt.Errorf("poll task in %s: %w", r.Dir(), err)
	}
	st, err := parseStatus(out, keyOf(r))
	if err != nil {
		return Status{}, fmt.Errorf("poll task in %s: %w", r.Dir(), err)
	}
	return st, nil
}

// MaxStateValue bounds what Poll reads of the phase and exit_code files, which
// the task itself can write over: the agent reads one byte more, so that a
// longer file is seen as too long instead of being cut into a valid value.
const MaxStateValue = agent.MaxStateValue

// forgedRecord is Status.Invalid for an exit code record whose tag does not
// verify, once the agent is gone.
const forgedRecord = "exit_code was not written by the node agent (its tag does not verify with the key the agent got at start): the task wrote over it"

// parseStatus reads the Poll script's answer. Whatever the node's files hold,
// it never fails on their content: a phase that is not one is ignored, and an
// exit_code that is not "<setup|run> <0-255>" is a Done node whose code is
// unknown, with the reason in Invalid. With the node's key, an exit code
// counts only when its tag verifies: one that does not is no exit code yet
// while the agent lives (it writes its own when the task ends), and a Done
// node whose code is unknown once the agent is gone (forgedRecord).
func parseStatus(out []byte, key []byte) (Status, error) {
	var st Status
	how := "" // the exit_code's third word; "" from an older node that wrote two
	var exits []string
	nodeKey := key
	for _, line := range strings.Split(string(out), "\n") {
		key, val, _ := strings.Cut(line, "=")
		switch key {
		case "started":
			st.Started = true
		case "alive":
			st.AgentAlive = true
		case "lost":
			st.AgentLost = true
		case "notice":
			var n agent.Notice
			if json.Unmarshal([]byte(val), &n) == nil {
				st.Notice = &n
			}
		case "storage":
			var ms []agent.MountSync
			if json.Unmarshal([]byte(val), &ms) == nil {
				st.Storage = ms
			}
		case "stopped":
			st.StopAsked = true
		case "unwritten":
			st.Unwritten = true
		case "phase":
			if !st.Done && (val == PhaseSetup || val == PhaseRun) {
				st.Phase = val
			}
		case "exit":
			exits = append(exits, val)
		case "progress":
			st.Progress = parseProgress(val, nodeKey)
		}
	}
	if key == nil && len(exits) > 0 {
		// A node from before keys: its last record, as it is.
		phase, n, word, _, problem := parseExitCode(exits[len(exits)-1])
		st.Done, st.ExitCode, st.Invalid, how = true, n, problem, word
		if problem == "" {
			st.Phase = phase
		}
	}
	if key != nil && len(exits) > 0 {
		// The agent's record is the one whose tag verifies (the others
		// are the task's).
		verified := false
		for _, val := range exits {
			phase, n, word, tag, problem := parseExitCode(val)
			if problem == "" && agent.CheckTag(key, phase, n, word, tag) {
				st.Done, st.ExitCode, st.Phase, how, verified = true, n, phase, word, true
				break
			}
		}
		if !verified && !st.AgentAlive {
			st.Done, st.Invalid = true, forgedRecord
		}
		if !verified {
			st.Unwritten = false
		}
	}
	// A code is sortie's when a stop was asked before the phase ended and
	// the phase ended by Stop's signal (SIGTERM's 143, SIGKILL's 137).
	// Anything else is the task's own, even when the stop marker came
	// later: a task that exited 29, or 0, before or while sortie stopped
	// it keeps its code. A node that did not record whether the stop
	// came first is judged by the marker.
	stopFirst := how == "stop" || (how == "" && st.StopAsked)
	st.Stopped = st.Done && st.Invalid == "" && stopFirst && (st.ExitCode == 143 || st.ExitCode == 137)
	return st, nil
}

// parseProgress reads a progress record, "<n> [tag]": nil when it is not
// one, or, with the node's key, when its tag does not verify (the task
// wrote it).
func parseProgress(val string, key []byte) *int64 {
	words := strings.Fields(val)
	if len(words) == 0 || len(words) > 2 {
		return nil
	}
	n, err := strconv.ParseInt(words[0], 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	if key != nil && (len(words) != 2 || !agent.CheckProgressTag(key, n, words[1])) {
		return nil
	}
	return &n
}

// parseExitCode reads an exit_code record, "<setup|run> <code> [-|stop]
// [tag]"; problem says why it is not that, with a code from 0 to 255.
func parseExitCode(val string) (phase string, code int, how, tag, problem string) {
	if len(val) > MaxStateValue {
		return "", 0, "", "", fmt.Sprintf("exit_code is longer than %d bytes", MaxStateValue)
	}
	shown := strconv.Quote(val)
	words := strings.Split(val, " ")
	if len(words) >= 3 {
		how = words[2]
	}
	if len(words) == 4 {
		tag = words[3]
	}
	if len(words) < 2 || len(words) > 4 || (words[0] != PhaseSetup && words[0] != PhaseRun) || (len(words) >= 3 && how != "-" && how != "stop") {
		return "", 0, "", "", fmt.Sprintf("exit_code holds %s, want \"<setup|run> <code> <-|stop>\"", shown)
	}
	n, err := strconv.Atoi(words[1])
	if err != nil || n < 0 || n > 255 || words[1] != strconv.Itoa(n) {
		return "", 0, "", "", fmt.Sprintf("exit_code holds %s, whose code is not an exit code (0-255)", shown)
	}
	return words[0], n, how, tag, ""
}

const readLogBody = `
[ -f "$D/log" ] || exit 0
tail -c "+$FROM" "$D/log" | head -c "$MAX"
`

// ReadLog returns the node's log from byte offset on, at most MaxLogChunk
// bytes of it; nothing when the log does not exist yet or ends before offset.
func ReadLog(ctx context.Context, r provision.Runner, offset int64) ([]byte, error) {
	if offset < 0 {
		return nil, fmt.Errorf("read log in %s: offset %d is negative", r.Dir(), offset)
	}
	s := script(readLogBody, "D", r.Dir(), "FROM", strconv.FormatInt(offset+1, 10), "MAX", strconv.Itoa(MaxLogChunk))
	out, err := r.Exec(ctx, s, nil)
	if err != nil {
		return nil, fmt.Errorf("read log in %s: %w", r.Dir(), err)
	}
	return out, nil
}

const stopBody = `
mkdir -p "$D" && D=$(cd "$D" && pwd -P) && cd "$D" || exit 1
: >stop
[ -e started ] || exit 0
termed=" "
i=0
while :; do
	live=0
	for f in pgid.setup pgid.run; do
		recorded "$f" && g=$REPLY || continue
		group_alive "$g" || continue
		live=1
		case $termed in *" $g "*) continue ;; esac
		# Remembered only once delivered: the group may not exist yet.
		kill -s TERM -- "-$g" 2>/dev/null && termed="$termed$g "
	done
	if [ $live = 0 ]; then
		[ -e record/exit_code ] || [ -e exit_code ] && exit 0
		agent_alive || exit 0
	fi
	# TICKS 0: the SIGTERM only; the caller waits and kills.
	[ "$TICKS" = 0 ] && { echo live; exit 0; }
	i=$((i + 1))
	[ $i -ge "$TICKS" ] && break
	sleep 0.05
done
for f in pgid.setup pgid.run; do
	recorded "$f" && g=$REPLY || continue
	group_alive "$g" && kill -s KILL -- "-$g" 2>/dev/null
done
# The agent records the exit code as soon as its phase is gone.
for i in $(seq 100); do
	[ -e record/exit_code ] || [ -e exit_code ] && exit 0
	agent_alive || exit 0
	sleep 0.02
done
exit 0
`

// Stop terminates the task's processes on the node behind r: SIGTERM to the
// current phase's process group, SIGKILL after DefaultStopGrace. The agent
// then records the phase's exit code (143 or 137) and begins no other phase.
// Stopping a node whose task has not started keeps a later Start from
// running anything.
func Stop(ctx context.Context, r provision.Runner) error {
	return StopWithin(ctx, r, DefaultStopGrace)
}

// Terminate asks the task on the node behind r to stop, as Stop does, but
// only sends the SIGTERM: it says whether the task still runs, which the
// caller then kills (StopWithin with no grace) when its grace has passed.
func Terminate(ctx context.Context, r provision.Runner) (bool, error) {
	out, err := r.Exec(ctx, script(stopBody, "D", r.Dir(), "TICKS", "0"), nil)
	if err != nil {
		return false, fmt.Errorf("stop task in %s: %w", r.Dir(), err)
	}
	return strings.TrimSpace(string(out)) == "live", nil
}

// StopWithin is Stop with the given grace between SIGTERM and SIGKILL.
func StopWithin(ctx context.Context, r provision.Runner, grace time.Duration) error {
	ticks := int(grace / (50 * time.Millisecond))
	if ticks < 1 {
		ticks = 1
	}
	s := script(stopBody, "D", r.Dir(), "TICKS", strconv.Itoa(ticks))
	if _, err := r.Exec(ctx, s, nil); err != nil {
		return fmt.Errorf("stop task in %s: %w", r.Dir(), err)
	}
	return nil
}
