#!/usr/bin/env bash
# Starts the multi-node test cluster in DIR (docs/e2e.md): a control plane on
# the host (etcd, kube-apiserver, kube-scheduler, kube-controller-manager), a
# control-plane node and N GPU nodes, each a kubelet and a containerd in
# mount, network and PID namespaces of its own, each GPU node with a fake
# machine (sysfs tree, RDMA device nodes, its NICs as veths), and a rail
# fabric (one leaf bridge per rail in a fabric namespace; spine off).
#
#   hack/cluster/up.sh DIR [--kubernetes 1.35|1.37] [--nodes N]
#                          [--machines dgx-h100,dgx-a100] [--spine] [--gpu-dra]
#                          [--group-scheduling]
#   source DIR/env      # KUBECONFIG, KUBECTL, KUBERNETES_VERSION, TEST_IMAGE, RAILYARD_VALUES
#   hack/cluster/down.sh DIR
#
#   --kubernetes 1.35|1.37  the Kubernetes release of the control plane, the
#                 kubelets, kube-proxy and kubectl (docs/e2e.md, "Version
#                 matrix"): 1.35 (default) runs v1.35.8 from _output/k8s/bin
#                 (hack/cluster/build.sh k8s), 1.37 runs v1.37.2 from
#                 _output/k8s-1.37/bin (hack/cluster/build.sh k8s-1.37).
#                 DIR/env's KUBERNETES_VERSION is what the apiserver reports.
#   --nodes N     GPU nodes (default 2)
#   --machines M  built-in machine model of each GPU node, comma-separated
#                 (the last repeats; default dgx-h100)
#   --spine       start with the fabric's spine on (rails joined)
#   --gpu-dra     run a STAND-IN GPU DRA driver (gpu.nvidia.com, built from
#                 test/e2e/framework/gpudra.go; not NVIDIA's) on every GPU
#                 node: its node's GPUs in a ResourceSlice, the DeviceClass
#                 gpu.nvidia.com, claims prepared with a CDI spec giving
#                 STANDIN_GPUS=<PCI addresses>; log DIR/logs/NODE/standin-gpu-dra.log
#   --group-scheduling  (1.37 only) group scheduling on: the feature gates
#                 GenericWorkload and TopologyAwareWorkloadScheduling on the
#                 apiserver, scheduler and controller manager, and the
#                 scheduling.k8s.io/v1beta1 API (PodGroup, Workload)
#
# It builds what it needs (cached: seconds when warm), imports Railyard's
# image (make images, or RAILYARD_CLUSTER_IMAGE) into every node and writes
# DIR/railyard-values.yaml.
# The cluster is served by DIR/bin/railyard-cluster in the background (log:
# DIR/logs/cluster.log) until down.sh. Needs root.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
usage() {
  echo "usage: $0 DIR [--kubernetes 1.35|1.37] [--nodes N] [--machines M1,M2] [--spine] [--gpu-dra] [--group-scheduling]" >&2
  exit 2
}
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  usage
fi
target="$1"
shift
# --kubernetes is up.sh's own; every other option goes to railyard-cluster.
kubernetes=1.35
group_scheduling=
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kubernetes) [ $# -ge 2 ] || usage; kubernetes="$2"; shift 2 ;;
    --kubernetes=*) kubernetes="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --group-scheduling) group_scheduling=1; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
# The releases of the version matrix: each a build.sh target and its
# default output directory.
case "$kubernetes" in
  1.35) k8s_bin="$repo/_output/k8s/bin" ;;
  1.37) k8s_bin="$repo/_output/k8s-1.37/bin" ;;
  *) echo "up: --kubernetes $kubernetes: this cluster runs 1.35 or 1.37" >&2; usage ;;
esac
if [ -n "$group_scheduling" ] && [ "$kubernetes" != 1.37 ]; then
  echo "up: --group-scheduling needs --kubernetes 1.37 ($kubernetes lacks TopologyAwareWorkloadScheduling and scheduling.k8s.io/v1beta1)" >&2
  exit 2
fi
mkdir -p "$target"
dir="$(cd "$target" && pwd)"
t0=$(date +%s)
cd "$repo"

step() {
  local name="$1"; shift
  local t; t=$(date +%s)
  "$@"
  echo "up: $name took $(( $(date +%s) - t ))s"
}
step "debian packages" hack/cluster/install-packages.sh
step "kubernetes $kubernetes binaries" hack/cluster/build.sh "k8s-$kubernetes" "$k8s_bin"
step "containerd v2" hack/cluster/build.sh containerd "$repo/_output/containerd/bin"
step "coredns" hack/cluster/build.sh coredns "$repo/_output/coredns/bin"
step "whereabouts" hack/cluster/build.sh whereabouts "$repo/_output/whereabouts/bin"
# whereabouts' CRDs: the same module version's, from the module cache.
wa_crds="$(cd hack/cluster/whereaboutsbin && go list -mod=readonly -m -f '{{.Dir}}' github.com/k8snetworkplumbingwg/whereabouts)/doc/crds"
step "cni plugins" hack/cluster/install-cni.sh "$repo/_output/k8s/cni"
version="$(sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/railyard/Chart.yaml)"
arch="$(go env GOARCH)"
# RAILYARD_CLUSTER_IMAGE: an image archive built already (its tag must be
# the chart's appVersion); otherwise make images builds one.
image="${RAILYARD_CLUSTER_IMAGE:-}"
if [ -z "$image" ]; then
  step "railyard image (make images)" make -s images VERSION="$version"
  image="$repo/_output/images/railyard-$version-$arch.tar"
fi
[ -f "$image" ] || { echo "up: image archive $image missing" >&2; exit 1; }
step "railyard-cluster" go build -tags e2e -o "$dir/bin/railyard-cluster" ./hack/cluster/railyard-cluster

mkdir -p "$dir/logs"
rm -f "$dir/ready"
# setsid: the server outlives this script and ignores the terminal's ^C.
# It keeps none of this script's other descriptors: a caller's flock(1)
# lock, say, would otherwise stay held for the cluster's whole life.
(
  for fd in "/proc/$BASHPID/fd/"*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ] && [ "$fd" != 255 ]; then eval "exec $fd>&-"; fi
  done
  exec setsid "$dir/bin/railyard-cluster" up "$dir" \
    --k8s-bin "$k8s_bin" --cni-bin "$repo/_output/k8s/cni" \
    --containerd-bin "$repo/_output/containerd/bin" --coredns-bin "$repo/_output/coredns/bin" \
    --whereabouts-bin "$repo/_output/whereabouts/bin" --whereabouts-crds "$wa_crds" \
    --image "$image" --image-tag "$version" "${args[@]}"
) >"$dir/logs/cluster.log" 2>&1 </dev/null &
server=$!
tail -n +1 -F --pid=$$ "$dir/logs/cluster.log" 2>/dev/null | sed -u "s/^/up: /" &
tailer=$!
trap 'kill $tailer 2>/dev/null || true' EXIT
while [ ! -f "$dir/ready" ]; do
  if ! kill -0 "$server" 2>/dev/null; then
    sleep 0.5
    echo "up: the cluster failed to start (log: $dir/logs/cluster.log, components: $dir/logs/)" >&2
    exit 1
  fi
  sleep 0.5
done
sleep 0.3
echo "up: cluster up in $(( $(date +%s) - t0 ))s; source $dir/env (down: hack/cluster/down.sh $dir)"
