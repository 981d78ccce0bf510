#!/bin/bash
# Makes sure OpenSSH's server binary is installed, for the tests that run a
# private sshd as every cloud instance's SSH endpoint. EnsureSSHD runs it
# before such a test; it does nothing when sshd is already there.
set -euo pipefail
if [ -x /usr/sbin/sshd ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "/usr/sbin/sshd is missing and apt-get is not available: install OpenSSH's server (package openssh-server) by hand" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "/usr/sbin/sshd is missing: run 'apt-get install -y openssh-server' as root" >&2
		exit 1
	fi
	sudo="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y --no-install-recommends openssh-server >/dev/null; then
	$sudo apt-get update >/dev/null
	$sudo apt-get install -y --no-install-recommends openssh-server >/dev/null
fi
test -x /usr/sbin/sshd
