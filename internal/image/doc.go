// Package image builds Railyard's container image without a Docker daemon
// and without a base image: static Go binaries (CGO_ENABLED=0, -trimpath,
// -buildvcs=false, stripped, version and revision set with -X), put in one
// deterministic layer (sorted entries, uid/gid 0, fixed modes, every
// timestamp the given creation time) and assembled with go-containerregistry
// into an OCI image.
//
// The output is one tar that is at the same time an OCI image layout
// (oci-layout, index.json, blobs/sha256/...), which `ctr images import`
// reads, and a docker-archive (manifest.json naming the same blobs), which
// `docker load` reads, as `docker save` has written since Docker 25.
//
// Two builds of one commit with the same Go toolchain give the same bytes
// and therefore the same digest: nothing depends on the checkout's path,
// file times, owners, umask, the environment's GOFLAGS or the clock.
//
// One image holds every node-side binary (railyard-agent, railyard-cni,
// railyard-cni-install and the railyard CLI): the DaemonSet's installer and
// agent then always come from one version and a node pulls one image.
//
// hack/image is the command (`make images`); see docs/install.md.
package image
