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
// With --infiniband-diags (`make images-infiniband`) the image gets a
// second layer and the tag <version>-infiniband-diags: infiniband-diags'
// smpquery and exactly what it loads (its loader, libc, libibmad,
// libibumad), taken from Debian 12 packages pinned by version, size and
// SHA256 (debian.go), downloaded from deb.debian.org once into
// _output/debs and verified before use, plus each package's copyright
// file and dpkg status stanza (var/lib/dpkg/status.d, for scanners). The
// layer is built as deterministically as the first; the first layer is
// the plain image's, byte for byte. The chart's fabric DaemonSet runs it
// with fabric.infiniband.enabled (docs/fabric.md).
//
// hack/image is the command (`make images`); see docs/install.md.
package image
