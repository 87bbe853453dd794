// Package release cuts a Railyard release (`make release VERSION=X.Y.Z`,
// hack/release): everything an adopter downloads, pins and verifies, in
// one directory, the same bytes on every run of one commit.
//
// For each architecture (amd64 and arm64 by default) it builds the image
// archive with internal/image (static binaries stamped with the version
// and revision, one deterministic layer), and the infiniband-diags
// variant with its layer of pinned Debian packages; for each archive a
// CycloneDX 1.6 JSON SBOM (sbom.go) read back from the archive itself:
// the Go modules of every binary (debug/buildinfo), the Go standard
// library, the Debian packages of the dpkg status stanzas the layer
// carries, and the image's manifest digest. It packages the Helm chart
// with the same version and appVersion (chart.go: Helm's own Save, then
// every entry's time, owner and order fixed, since Helm stamps the
// clock), and writes SHA256SUMS over every artifact (sums.go), readable
// by `sha256sum -c`.
//
// Nothing depends on the clock, the checkout's path, map order or random
// numbers: times are the commit's (SOURCE_DATE_EPOCH), the SBOM's serial
// number is a name-based UUID of the image's digest, and lists are
// sorted. docs/release.md has the policy and the steps.
package release
