// Package helmchart renders and lints Railyard's Helm chart
// (deploy/helm/railyard) with Helm's Go SDK, and keeps the static manifests
// in deploy/ equal to renderings of the chart (`make manifests`, checked by
// a test that fails when they drift).
//
// Only hack/manifests and this package's tests import it, so Helm's large
// dependency tree is compiled for them alone: railyard-agent and
// railyard-cni do not link it (a test checks with `go list -deps`).
package helmchart
