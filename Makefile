# sortie — build, test, demo. Everything a test needs is installed or
# started from here or by the test itself.
GO      ?= go
BIN     := bin/sortie
# The CLI (sortie) and the controller program (sortie-controller), which
# alone links the cloud SDKs, are built side by side: the CLI starts the
# controller from its own directory, and the controller finds the node agent
# (sortie-agent) and the bucket sync program (sortie-sync) in it. Both are
# static (no cgo): they are copied to every VM. Every program is stripped
# (-s -w: no symbol table, no DWARF), which takes 40 MB off the controller
# (148 to 108 MB) and 9 MB off the CLI; panics still print stack traces,
# and `sortie version` still reads the module version, VCS revision and Go
# version from the build info, which stripping keeps.
BINS    := ./cmd/sortie ./cmd/sortie-controller
LDFLAGS := -ldflags='-s -w'
BUILD    = $(GO) build $(LDFLAGS) -o bin/ $(BINS)
AGENT_BUILD = CGO_ENABLED=0 $(GO) build $(LDFLAGS) -o bin/ ./cmd/sortie-agent ./cmd/sortie-sync
TIMEOUT ?= 75m

.PHONY: all build test unit smoke demo deps vet lint clean bench fuzz chaos kube-control-plane aws-playground

all: build

build:
	$(BUILD)
	$(AGENT_BUILD)

# deps makes sure the programs tests drive are on this machine: an sshd to
# play the clouds' nodes, bubblewrap (bwrap) for the local sandbox, the moto EC2 emulator, Debian's chromium for the
# dashboard's browser tests, and a PostgreSQL server (the store's tests
# start their own on a free port; the package's own service is not used).
# Without PostgreSQL the store's PostgreSQL tests skip, saying so.
deps:
	@if [ ! -x /usr/sbin/sshd ]; then \
		echo "installing openssh-server (for the SSH node tests)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null) || \
		{ echo "could not install openssh-server; install it and run make test again" >&2; exit 1; }; \
	fi
	@if ! command -v bwrap >/dev/null 2>&1; then \
		echo "installing bubblewrap (the local provider's sandbox)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) || \
		{ echo "could not install bubblewrap; install it and run make test again" >&2; exit 1; }; \
	fi
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing chromium (for the dashboard's browser tests)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
		{ echo "could not install chromium; install it and run make test again" >&2; exit 1; }; \
	fi
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing postgresql-15 (for the store's PostgreSQL tests)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) || \
		echo "could not install postgresql-15: the store's PostgreSQL tests will be skipped; install it and run make test again" >&2; \
	fi
	@python3 -c 'import moto' 2>/dev/null || { echo "moto (the EC2 emulator) is missing: pip install 'moto[server]'" >&2; exit 1; }

# kube-control-plane builds etcd and kube-apiserver, which the Kubernetes
# provider's tests start, from the Go module proxy into a cache folder
# outside the repository ($$SORTIE_KUBE_BIN_DIR, else
# ~/.cache/sortie/kube-VERSION), when they are not there yet (or the
# apiserver there lacks its version stamp), and says how long that took: about 10 minutes on 2 cores the first time (2.4 GB of
# memory at the peak), nothing after. It builds at a low priority, so that
# a shared machine stays usable (GOFLAGS=-p=1 makes it gentler still).
kube-control-plane:
	@GO=$(GO) nice -n 10 sh provision/kubernetes/kubetest/build-control-plane.sh >/dev/null

vet:
	$(GO) vet ./...

# lint checks that every file is gofmt'ed and runs staticcheck over the
# module, tests included. staticcheck's version is pinned, so a new
# release's checks arrive only when the pin moves; go run fetches it into
# the module cache the first time.
lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "not gofmt'ed: $$unformatted" >&2; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Tests never ask the instance metadata service for credentials: every AWS
# test talks to moto with fixed test credentials.
test: export AWS_EC2_METADATA_DISABLED = true
test: deps kube-control-plane vet lint
	$(GO) test -count=1 -timeout $(TIMEOUT) ./...
	$(GO) test -count=1 -race ./controller/... ./strategy/... ./schema/... ./provision/local/... ./provision/node/...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME_TEST)

# fuzz runs each fuzz target for FUZZTIME (make test: FUZZTIME_TEST each).
# make test counts executions rather than seconds: a timed run can end in
# "context deadline exceeded" when the clock runs out mid-input, a failure
# of the fuzzing engine's, not of the code.
# Every target's seeds, and any failing input a run saves under the
# package's testdata/fuzz, also run as plain tests in go test.
FUZZTIME      ?= 3m
FUZZTIME_TEST ?= 2000x
FUZZ_TARGETS  := ./schema:FuzzParse ./schema:FuzzApplySet ./controller/config:FuzzLoad \
                 ./provision/node:FuzzParseStatus ./provision/sim:FuzzStateFile ./provision/local:FuzzClusterRecord \
                 ./controller/home:FuzzReadSecrets
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

# unit is the unit tier: it installs and starts nothing outside the test
# binaries (no PostgreSQL, moto, sshd, Chromium or kube-apiserver: under
# -short their tests skip, saying make test runs them), so it runs on a
# fresh clone with Go alone. It took 2m48s on 2 cores shared with other
# builds (load average 13 to 18), from a warm build cache; a first build of
# the cloud SDKs comes on top.
# test is the whole suite, as CI runs it: deps installs sshd, bubblewrap,
# Chromium and PostgreSQL and needs moto, kube-control-plane builds etcd and
# kube-apiserver (about 10 minutes the first time), and the tests start
# them and moto; it took about 10 minutes in CI from a fresh clone with the
# control plane cached, and is given up to $(TIMEOUT).
unit:
	$(GO) test -count=1 -short ./schema/... ./strategy/... ./controller/... ./provision/...

smoke:
	$(GO) test -count=1 -v ./smoke_tests/...

# bench runs the benchmark suite (about 10 minutes) and prints one line per
# figure, "name value unit", on stdout; progress goes to stderr. BENCHFLAGS
# passes options, e.g. BENCHFLAGS="-only queue,launch".
# It builds the binary itself, quietly: make would echo a build step on stdout.
bench:
	@$(BUILD) >&2
	@$(AGENT_BUILD) >&2
	@$(GO) run ./smoke_tests/bench -bin $(BIN) $(BENCHFLAGS)

# chaos kills the controller program with SIGKILL again and again while
# 1,000 sim jobs (under a server limit, with preemption by priority) and
# 40 local jobs run (about 6 minutes), checks the
# invariants of the README's Reliability section, and prints one line per
# provider, "jobs N, kills K, lost 0, duplicated 0, leaked 0, mismatched 0,
# ..."; it exits 1 when one broke. CHAOSFLAGS passes options (-seed, -keep
# -work DIR, -only sim).
chaos:
	@$(BUILD) >&2
	@$(AGENT_BUILD) >&2
	@$(GO) run ./smoke_tests/chaos -bin $(BIN) $(CHAOSFLAGS)

# demo runs a job on the local provider that fails with a listed exit code
# twice, recovers, succeeds, and prints the queue.
demo: build
	@SORTIE=$(CURDIR)/$(BIN) bash smoke_tests/demo/demo.sh

# aws-playground runs AWS on this machine, to try the AWS provider without
# an account (README.md, "Try AWS without an account"): moto, the tests'
# fault proxy in front of it and an sshd playing every instance, a sortie
# home wired to them, and a control port that takes an instance away as a
# spot interruption. It prints the lines to paste, and Ctrl-C stops it all.
# It needs moto and sshd, as make test does. AWS_PLAYGROUND_FLAGS passes
# options: -dir DIR keeps the home and the nodes there, -port N.
# It is built into bin/.aws-playground and run from there: go run would end
# in an error at Ctrl-C.
aws-playground: build
	@$(GO) build -o bin/.aws-playground ./provision/aws/playground
	@exec bin/.aws-playground -sortie $(CURDIR)/$(BIN) $(AWS_PLAYGROUND_FLAGS)

clean:
	rm -rf bin
