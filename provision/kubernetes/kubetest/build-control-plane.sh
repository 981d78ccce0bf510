#!/bin/sh
# build-control-plane.sh builds the etcd and kube-apiserver programs the
# Kubernetes provider's tests start, into a cache folder named after their
# versions, and does nothing when both are already there. It prints the
# folder on stdout (the last line) and how long the build took on stderr.
#
# Both come from the Go module proxy: a scratch module requires etcd's server
# module, and another requires k8s.io/kubernetes with each of its staging
# modules (k8s.io/api, k8s.io/apiserver, ...) mapped to the published
# v0.X.Y version of the same release. A cold build takes about 10 minutes
# on 2 cores and 2.4 GB of memory; GOFLAGS=-p=1 keeps a shared machine usable.
#
# kube-apiserver is stamped with its version (-ldflags -X, as Kubernetes'
# own build does), so /version answers v1.37.2 rather than the
# v0.0.0-master placeholder; one that does not say so when asked
# --version (built before it was stamped) is built again.
set -eu

ETCD_VERSION=v3.7.3
KUBE_VERSION=v1.37.2
STAGING_VERSION=v0.37.2

GO=${GO:-go}
dir=${SORTIE_KUBE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sortie/kube-$KUBE_VERSION}

# stamped reports whether the kube-apiserver in $dir says it is $KUBE_VERSION.
stamped() {
	[ -x "$dir/kube-apiserver" ] && [ "$("$dir/kube-apiserver" --version 2>/dev/null)" = "Kubernetes $KUBE_VERSION" ]
}

if [ -x "$dir/etcd" ] && stamped; then
	echo "etcd $ETCD_VERSION and kube-apiserver $KUBE_VERSION are built already, in $dir" >&2
	echo "$dir"
	exit 0
fi

mkdir -p "$dir"
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$dir/etcd" ]; then
	echo "building etcd $ETCD_VERSION into $dir (about 1.5 minutes the first time)" >&2
	mkdir "$work/etcd"
	cd "$work/etcd"
	"$GO" mod init scratch/etcd >/dev/null 2>&1
	"$GO" mod edit -require=go.etcd.io/etcd/server/v3@$ETCD_VERSION
	GOFLAGS="${GOFLAGS:-} -mod=mod" "$GO" build -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3
	mv "$dir/etcd.tmp" "$dir/etcd"
fi

if [ -x "$dir/kube-apiserver" ] && ! stamped; then
	# Replaced only once the new one is built: tests may be using it.
	echo "kube-apiserver in $dir does not say it is $KUBE_VERSION (built before it was stamped): building it again" >&2
fi
if ! stamped; then
	echo "building kube-apiserver $KUBE_VERSION into $dir (about 10 minutes the first time)" >&2
	mkdir "$work/kube"
	cd "$work/kube"
	"$GO" mod init scratch/kube >/dev/null 2>&1
	# The staging modules k8s.io/kubernetes replaces with its own folders.
	gomod=$("$GO" mod download -json k8s.io/kubernetes@$KUBE_VERSION | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
	for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod" | grep -v '^k8s.io/sample-'); do
		"$GO" mod edit -replace="$m=$m@$STAGING_VERSION"
	done
	"$GO" mod edit -require=k8s.io/kubernetes@$KUBE_VERSION
	# The version stamp Kubernetes' hack/lib/version.sh sets, for both
	# packages that answer it (/version and --version).
	major=${KUBE_VERSION#v}
	minor=${major#*.}
	major=${major%%.*}
	minor=${minor%%.*}
	ldflags=""
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	done
	GOFLAGS="${GOFLAGS:-} -mod=mod" "$GO" build -ldflags="$ldflags" -o "$dir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
	mv "$dir/kube-apiserver.tmp" "$dir/kube-apiserver"
fi

end=$(date +%s)
echo "built etcd and kube-apiserver in $((end - start)) s" >&2
echo "$dir"
