#!/usr/bin/env bash
# Runs every Moldau test: unit tests, the integration suite (real brokers,
# real sockets, kcat and the Python clients), and franz-go's own kgo
# integration tests as a conformance suite against a Moldau broker.
#
# Prerequisites beyond Go: kcat, strace, chromium (the console's browser
# test), python3-confluent-kafka and python3-kafka from Debian. When run
# as root on Debian they are installed if missing;
# otherwise the script names the command to run.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v strace >/dev/null 2>&1 || need+=(strace)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
if ((${#need[@]})); then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "test.sh: installing ${need[*]}"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		echo "test.sh: missing ${need[*]}: run  sudo apt-get install -y ${need[*]}" >&2
		exit 1
	fi
fi

# -race on everything; the integration package also runs the kgo
# conformance suite (see integration/conformance_test.go).
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "test.sh: not gofmt-formatted: $unformatted" >&2
	exit 1
fi
# The S3 tiered-storage test (log/remote) runs a real versitygw server.
if [[ -z ${MOLDAU_VERSITYGW:-} ]]; then
	gobin="$(go env GOPATH)/bin"
	if ! MOLDAU_VERSITYGW=$(command -v versitygw 2>/dev/null) && [[ ! -x $gobin/versitygw ]]; then
		echo "test.sh: installing versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
		GOBIN="$gobin" go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 >/dev/null 2>&1 || {
			echo "test.sh: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 failed" >&2
			exit 1
		}
	fi
	[[ -n ${MOLDAU_VERSITYGW:-} ]] || MOLDAU_VERSITYGW=$gobin/versitygw
	export MOLDAU_VERSITYGW
fi
go vet ./...
go test -race -count=1 -timeout 45m ./...
