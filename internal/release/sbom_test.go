package release

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-cmp/cmp"
)

var testCreated = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testBuildInfo is a binary's build information as `go version -m`
// prints it: a module replaced by another, and one "+incompatible".
// ParseBuildInfo leaves GoVersion to debug/buildinfo, which reads it
// from the binary: testContents sets it.
const testBuildInfo = "path\tgithub.com/railyard-io/railyard/cmd/railyard-agent\n" +
	"mod\tgithub.com/railyard-io/railyard\t(devel)\t\n" +
	"dep\tgithub.com/google/go-cmp\tv0.7.0\th1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=\n" +
	"dep\texample.com/forked\tv1.0.0\th1:aaaa\n" +
	"=>\texample.com/fork\tv1.0.1\th1:bbbb\n" +
	"dep\texample.com/old\tv2.0.0+incompatible\th1:cccc\n" +
	"build\t-trimpath=true\n" +
	"build\tCGO_ENABLED=0\n" +
	"build\tGOARCH=amd64\n"

// testContents is an infiniband-diags image with one binary of
// testBuildInfo and Debian's stanzas of the infiniband-diags layer.
func testContents(t *testing.T) Contents {
	t.Helper()
	bi, err := debug.ParseBuildInfo(testBuildInfo)
	if err != nil {
		t.Fatal(err)
	}
	bi.GoVersion = "go1.26.8"
	return Contents{
		Name: "ghcr.io/railyard-io/railyard:0.2.0-infiniband-diags", Digest: testDigest, OS: "linux", Arch: "amd64",
		Labels:   map[string]string{"org.opencontainers.image.version": "0.2.0", "org.opencontainers.image.revision": "abc"},
		Binaries: []Binary{{Path: "usr/local/bin/railyard-agent", SHA256: strings.Repeat("ab", 32), Info: bi}},
		Packages: []Package{
			{Name: "infiniband-diags", Version: "44.0-2", Arch: "amd64", Source: "rdma-core", Depends: []string{"libc6", "libibmad5", "libibumad3", "libibnetdisc5"}, Copyright: "usr/share/doc/infiniband-diags/copyright"},
			{Name: "libc6", Version: "2.36-9+deb12u14", Arch: "amd64", Source: "glibc", Maintainer: "GNU Libc Maintainers <debian-glibc@lists.debian.org>", Homepage: "https://www.gnu.org/software/libc/libc.html"},
			{Name: "libibmad5", Version: "44.0-2", Arch: "amd64", Source: "rdma-core", Depends: []string{"libc6", "libibumad3"}},
			{Name: "libibumad3", Version: "44.0-2", Arch: "amd64", Source: "rdma-core", Depends: []string{"libc6"}},
		},
	}
}

func TestSBOMListsTheModulesTheStandardLibraryAndDebianPackages(t *testing.T) {
	c := testContents(t)
	bom, err := SBOM(c, SBOMOptions{Version: "0.2.0", Created: testCreated})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := EncodeSBOM(bom)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeSBOM(t, doc)
	if got.SpecVersion != cdx.SpecVersion1_6 || got.BOMFormat != "CycloneDX" {
		t.Errorf("format %s %s, want CycloneDX 1.6", got.BOMFormat, got.SpecVersion)
	}
	imagePURL := "pkg:oci/railyard@sha256%3A" + strings.TrimPrefix(testDigest, "sha256:") + "?arch=amd64&repository_url=ghcr.io/railyard-io/railyard&tag=0.2.0-infiniband-diags"
	if m := got.Metadata; m == nil || m.Component == nil || m.Component.PackageURL != imagePURL || m.Timestamp != "2026-08-01T12:00:00Z" {
		t.Fatalf("metadata %+v: want the image %s at 2026-08-01T12:00:00Z", m, imagePURL)
	}

	mod, ok := component(got, ModulePath)
	if !ok || mod.Version != "v0.2.0" || mod.PackageURL != "pkg:golang/"+ModulePath+"@v0.2.0" || mod.Licenses == nil || (*mod.Licenses)[0].License.ID != "Apache-2.0" {
		t.Errorf("railyard module: %+v", mod)
	}
	type gomod struct{ Name, Version, PURL, CPE, Sum string }
	var mods []gomod
	for _, comp := range *got.Components {
		if strings.HasPrefix(comp.PackageURL, "pkg:golang/") {
			m := gomod{Name: comp.Name, Version: comp.Version, PURL: comp.PackageURL, CPE: comp.CPE}
			if comp.Properties != nil {
				m.Sum = (*comp.Properties)[0].Value
			}
			mods = append(mods, m)
		}
	}
	wantMods := []gomod{
		{"example.com/fork", "v1.0.1", "pkg:golang/example.com/fork@v1.0.1", "", "h1:bbbb"},
		{"example.com/old", "v2.0.0+incompatible", "pkg:golang/example.com/old@v2.0.0%2Bincompatible", "", "h1:cccc"},
		{"github.com/google/go-cmp", "v0.7.0", "pkg:golang/github.com/google/go-cmp@v0.7.0", "", "h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8="},
		{ModulePath, "v0.2.0", "pkg:golang/" + ModulePath + "@v0.2.0", "", ""},
		{"stdlib", "v1.26.8", "pkg:golang/stdlib@v1.26.8", "cpe:2.3:a:golang:go:1.26.8:-:*:*:*:*:*:*", ""},
	}
	if diff := cmp.Diff(wantMods, mods); diff != "" {
		t.Errorf("Go modules (-want +got):\n%s", diff)
	}
	agent, _ := component(got, "railyard-agent")
	wantProps := []cdx.Property{
		{Name: "railyard:file:path", Value: "/usr/local/bin/railyard-agent"}, {Name: "railyard:go:version", Value: "go1.26.8"},
		{Name: "railyard:go:build:-trimpath", Value: "true"}, {Name: "railyard:go:build:CGO_ENABLED", Value: "0"},
		{Name: "railyard:go:build:GOARCH", Value: "amd64"},
	}
	if agent.Properties == nil || agent.Version != "0.2.0" || agent.Hashes == nil || (*agent.Hashes)[0].Value != strings.Repeat("ab", 32) {
		t.Errorf("railyard-agent: %+v", agent)
	} else if diff := cmp.Diff(wantProps, *agent.Properties); diff != "" {
		t.Errorf("railyard-agent's properties (-want +got):\n%s", diff)
	}

	type deb struct{ Name, PURL, Publisher string }
	var debs []deb
	for _, comp := range *got.Components {
		if strings.HasPrefix(comp.PackageURL, "pkg:deb/") {
			debs = append(debs, deb{comp.Name, comp.PackageURL, comp.Publisher})
		}
	}
	wantDebs := []deb{
		{"infiniband-diags", "pkg:deb/debian/infiniband-diags@44.0-2?arch=amd64&distro=debian-12&upstream=rdma-core", ""},
		{"libc6", "pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64&distro=debian-12&upstream=glibc", "GNU Libc Maintainers <debian-glibc@lists.debian.org>"},
		{"libibmad5", "pkg:deb/debian/libibmad5@44.0-2?arch=amd64&distro=debian-12&upstream=rdma-core", ""},
		{"libibumad3", "pkg:deb/debian/libibumad3@44.0-2?arch=amd64&distro=debian-12&upstream=rdma-core", ""},
	}
	if diff := cmp.Diff(wantDebs, debs); diff != "" {
		t.Errorf("Debian packages (-want +got):\n%s", diff)
	}
	if osc, ok := component(got, "debian"); !ok || osc.Type != cdx.ComponentTypeOS || osc.Version != "12" {
		t.Errorf("operating system: %+v", osc)
	}

	wantTop := []string{"file:/usr/local/bin/railyard-agent", "os:debian@12", wantDebs[0].PURL, wantDebs[1].PURL, wantDebs[2].PURL, wantDebs[3].PURL}
	if diff := cmp.Diff(wantTop, dependsOn(got, imagePURL)); diff != "" {
		t.Errorf("the image's dependencies (-want +got):\n%s", diff)
	}
	// libibnetdisc5 is not in the image: left out, not dangling.
	if diff := cmp.Diff([]string{wantDebs[1].PURL, wantDebs[2].PURL, wantDebs[3].PURL}, dependsOn(got, wantDebs[0].PURL)); diff != "" {
		t.Errorf("infiniband-diags' dependencies (-want +got):\n%s", diff)
	}
	var wantBin []string
	for _, m := range wantMods {
		wantBin = append(wantBin, m.PURL)
	}
	if diff := cmp.Diff(wantBin, dependsOn(got, "file:/usr/local/bin/railyard-agent")); diff != "" {
		t.Errorf("the binary's dependencies (-want +got):\n%s", diff)
	}
	// Every reference in the graph is a component (or the image).
	refs := map[string]bool{imagePURL: true}
	for _, comp := range *got.Components {
		refs[comp.BOMRef] = true
	}
	for _, d := range *got.Dependencies {
		for _, r := range append([]string{d.Ref}, deref(d.Dependencies)...) {
			if !refs[r] {
				t.Errorf("dependency graph names %s, which no component has", r)
			}
		}
	}
}

func TestSBOMIsTheSameForTheSameImageAndItsSerialFollowsTheDigest(t *testing.T) {
	c := testContents(t)
	encode := func(c Contents) ([]byte, string) {
		bom, err := SBOM(c, SBOMOptions{Version: "0.2.0", Created: testCreated})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := EncodeSBOM(bom)
		if err != nil {
			t.Fatal(err)
		}
		return doc, bom.SerialNumber
	}
	a, serialA := encode(c)
	// The same contents with their lists and labels built in another
	// order give the same document.
	c2 := testContents(t)
	c2.Packages[0], c2.Packages[3] = c2.Packages[3], c2.Packages[0]
	b, serialB := encode(c2)
	if !bytes.Equal(a, b) {
		t.Errorf("two SBOMs of one image differ:\n%s", cmp.Diff(string(a), string(b)))
	}
	if !strings.HasPrefix(serialA, "urn:uuid:") || serialA != serialB {
		t.Errorf("serial numbers %q and %q", serialA, serialB)
	}
	c.Digest = "sha256:" + strings.Repeat("f", 64)
	if _, serialC := encode(c); serialC == serialA {
		t.Errorf("another image has the same serial number %s", serialC)
	}
}

func TestSBOMRefusesWhatItCannotName(t *testing.T) {
	for name, change := range map[string]func(*Contents){
		"no tag":         func(c *Contents) { c.Name = "ghcr.io/railyard-io/railyard" },
		"no digest":      func(c *Contents) { c.Digest = "" },
		"no main module": func(c *Contents) { c.Binaries[0].Info = &debug.BuildInfo{} },
	} {
		c := testContents(t)
		change(&c)
		if _, err := SBOM(c, SBOMOptions{Version: "0.2.0", Created: testCreated}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseStatusReadsADpkgStanza(t *testing.T) {
	stanza := `Package: libibmad5
Status: install ok installed
Source: rdma-core (44.0-2)
Version: 44.0-2
Architecture: amd64
Maintainer: Benjamin Drung <bdrung@debian.org>
Installed-Size: 101
Pre-Depends: libc6 (>= 2.34)
Depends: libc6 (>= 2.14), libibumad3 (>= 1.3.10.2) | libibumad3-alt, libc6:any
Homepage: https://github.com/linux-rdma/rdma-core
Description: Infiniband Management Datagram (MAD) library
 libibmad provides low layer Infiniband functions for use by the
 Infiniband diagnostic and management programs.
`
	got, err := ParseStatus([]byte(stanza))
	if err != nil {
		t.Fatal(err)
	}
	want := Package{
		Name: "libibmad5", Version: "44.0-2", Arch: "amd64", Source: "rdma-core",
		Maintainer: "Benjamin Drung <bdrung@debian.org>", Homepage: "https://github.com/linux-rdma/rdma-core",
		Depends: []string{"libc6", "libibumad3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "Package: a\nVersion: 1\n", "Package: a\nno field here\n"} {
		if _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDebianReleaseComesFromAStableUpdate(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{"44.0-2", "2.36-9+deb12u14"}, "12"},
		{[]string{"2.41-12+deb13u1"}, "13"},
		{[]string{"44.0-2"}, ""},
		{nil, ""},
	} {
		var pkgs []Package
		for _, v := range tc.versions {
			pkgs = append(pkgs, Package{Version: v})
		}
		if got := DebianRelease(pkgs); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.versions, got, tc.want)
		}
	}
}

func deref(p *[]string) []string {
	if p == nil {
		return nil
	}
	return *p
}
