package release

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/uuid"
)

// SBOMSpec is the CycloneDX version the SBOMs are written in: 1.6, which
// Trivy, Grype and Dependency-Track read.
const SBOMSpec = cdx.SpecVersion1_6

// ModulePath is the Railyard module, the main module of every binary.
const ModulePath = "github.com/railyard-io/railyard"

// License is Railyard's license, as an SPDX identifier (LICENSE).
const License = "Apache-2.0"

// Property names of the SBOM (CycloneDX properties are free-form; these
// are Railyard's namespace).
const (
	propGoVersion = "railyard:go:version"
	propGoSetting = "railyard:go:build:" // + a build setting's key
	propGoSum     = "railyard:go:module:sum"
	propPath      = "railyard:file:path"
	propLabel     = "railyard:image:label:" // + an OCI label
	propSource    = "railyard:deb:source"
	propCopyright = "railyard:deb:copyright"
)

// SBOMOptions are what an SBOM says beyond the image's contents.
type SBOMOptions struct {
	// Version is the release version ("0.2.0"); the railyard module,
	// built from a checkout without a module version, gets "v"+Version.
	Version string
	// Created is the release time (the commit's): the SBOM's timestamp.
	Created time.Time
}

// debianReleaseRE finds the Debian release a package was built for in a
// stable update's version ("2.36-9+deb12u14": 12).
var debianReleaseRE = regexp.MustCompile(`\+deb([0-9]+)u[0-9]+`)

// DebianRelease is the Debian release of the packages ("12"), read from
// the version of a stable update among them (libc6's in Railyard's
// infiniband-diags layer), or empty when none says.
func DebianRelease(pkgs []Package) string {
	for _, p := range pkgs {
		if m := debianReleaseRE.FindStringSubmatch(p.Version); m != nil {
			return m[1]
		}
	}
	return ""
}

// SBOM returns the CycloneDX document of an image: the image as the
// described component (with its manifest digest), every Go binary with
// the modules it links (the Go standard library included) and every
// Debian package, with who depends on what. Everything in it comes from
// c and o: two calls with equal arguments give equal documents, and the
// serial number is a name-based UUID of the image's digest.
func SBOM(c Contents, o SBOMOptions) (*cdx.BOM, error) {
	ref, err := name.NewTag(c.Name, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("sbom: image name %q: %w", c.Name, err)
	}
	if !strings.HasPrefix(c.Digest, "sha256:") {
		return nil, fmt.Errorf("sbom: image digest %q", c.Digest)
	}
	repo := ref.Context().Name()
	imagePURL := "pkg:oci/" + path.Base(repo) + "@" + purlEscape(c.Digest) +
		"?arch=" + purlEscape(c.Arch) + "&repository_url=" + repo + "&tag=" + purlEscape(ref.TagStr())
	img := cdx.Component{
		BOMRef: imagePURL, Type: cdx.ComponentTypeContainer, Name: repo, Version: ref.TagStr(),
		PackageURL: imagePURL,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: strings.TrimPrefix(c.Digest, "sha256:")}},
	}
	var imgProps []cdx.Property
	for _, k := range sortedKeys(c.Labels) {
		imgProps = append(imgProps, cdx.Property{Name: propLabel + k, Value: c.Labels[k]})
	}
	if len(imgProps) > 0 {
		img.Properties = &imgProps
	}

	s := sbomBuilder{components: map[string]cdx.Component{}, deps: map[string][]string{}}
	var top []string
	for _, b := range c.Binaries {
		ref, err := s.binary(b, o)
		if err != nil {
			return nil, err
		}
		top = append(top, ref)
	}
	rel := DebianRelease(c.Packages)
	if len(c.Packages) > 0 && rel != "" {
		osRef := "os:debian@" + rel
		s.add(cdx.Component{BOMRef: osRef, Type: cdx.ComponentTypeOS, Name: "debian", Version: rel})
		top = append(top, osRef)
	}
	byName := map[string]string{}
	for _, p := range c.Packages {
		byName[p.Name] = debPURL(p, rel)
	}
	for _, p := range c.Packages {
		ref := s.deb(p, rel)
		top = append(top, ref)
		for _, d := range p.Depends {
			if r, ok := byName[d]; ok {
				s.deps[ref] = append(s.deps[ref], r)
			}
		}
	}
	s.deps[img.BOMRef] = top

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(imagePURL)).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp: o.Created.UTC().Truncate(time.Second).Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Group: "railyard-io", Name: "railyard-release", Version: o.Version,
			Description: "hack/release (internal/release)",
		}}},
		Component: &img,
	}
	comps := s.sorted()
	bom.Components = &comps
	deps := s.dependencies()
	bom.Dependencies = &deps
	return bom, nil
}

// EncodeSBOM writes bom as indented JSON in SBOMSpec ("&" in package
// URLs left as it is).
func EncodeSBOM(bom *cdx.BOM) ([]byte, error) {
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false).EncodeVersion(bom, SBOMSpec); err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	return buf.Bytes(), nil
}

// sbomBuilder collects components by bom-ref (a module linked by several
// binaries is one component) and the dependency graph.
type sbomBuilder struct {
	components map[string]cdx.Component
	deps       map[string][]string
}

func (s *sbomBuilder) add(c cdx.Component) string {
	if _, ok := s.components[c.BOMRef]; !ok {
		s.components[c.BOMRef] = c
	}
	return c.BOMRef
}

// binary adds a Go program, the standard library, its main module and
// every module it links.
func (s *sbomBuilder) binary(b Binary, o SBOMOptions) (string, error) {
	bi := b.Info
	if bi == nil || bi.Main.Path == "" {
		return "", fmt.Errorf("sbom: %s: no main module in its build information", b.Path)
	}
	props := []cdx.Property{{Name: propPath, Value: "/" + b.Path}, {Name: propGoVersion, Value: bi.GoVersion}}
	for _, st := range bi.Settings {
		props = append(props, cdx.Property{Name: propGoSetting + st.Key, Value: st.Value})
	}
	ref := "file:/" + b.Path
	s.add(cdx.Component{
		BOMRef: ref, Type: cdx.ComponentTypeApplication, Name: path.Base(b.Path), Version: o.Version,
		Hashes:   &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: b.SHA256}},
		Licenses: railyardLicense(), Properties: &props,
	})
	var deps []string
	if v := strings.TrimPrefix(bi.GoVersion, "go"); v != "" {
		// As Trivy names it (pkg:golang/stdlib@v1.26.8); Grype matches
		// the standard library by the CPE.
		std := cdx.Component{
			Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: "v" + v,
			PackageURL: "pkg:golang/stdlib@" + purlEscape("v"+v), CPE: "cpe:2.3:a:golang:go:" + v + ":-:*:*:*:*:*:*",
		}
		std.BOMRef = std.PackageURL
		deps = append(deps, s.add(std))
	}
	main := bi.Main
	if main.Version == "" || main.Version == "(devel)" {
		main.Version = "v" + o.Version
	}
	mainRef := s.module(main)
	if c := s.components[mainRef]; main.Path == ModulePath && c.Licenses == nil {
		c.Licenses = railyardLicense()
		s.components[mainRef] = c
	}
	deps = append(deps, mainRef)
	for _, m := range bi.Deps {
		deps = append(deps, s.module(*m))
	}
	s.deps[ref] = deps
	return ref, nil
}

// module adds a Go module (its replacement where it has one).
func (s *sbomBuilder) module(m debug.Module) string {
	if m.Replace != nil && m.Replace.Version != "" {
		m = *m.Replace
	}
	purl := "pkg:golang/" + m.Path + "@" + purlEscape(m.Version)
	c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: purl}
	if m.Sum != "" {
		c.Properties = &[]cdx.Property{{Name: propGoSum, Value: m.Sum}}
	}
	return s.add(c)
}

// debPURL is a Debian package's package URL as Syft writes it (Grype
// reads the source package from "upstream").
func debPURL(p Package, release string) string {
	q := []string{"arch=" + purlEscape(p.Arch)}
	if release != "" {
		q = append(q, "distro=debian-"+release)
	}
	if p.Source != "" && p.Source != p.Name {
		q = append(q, "upstream="+purlEscape(p.Source))
	}
	return "pkg:deb/debian/" + purlEscape(p.Name) + "@" + purlEscape(p.Version) + "?" + strings.Join(q, "&")
}

func (s *sbomBuilder) deb(p Package, release string) string {
	purl := debPURL(p, release)
	props := []cdx.Property{{Name: propSource, Value: p.Source}}
	if p.Copyright != "" {
		props = append(props, cdx.Property{Name: propCopyright, Value: "/" + p.Copyright})
	}
	c := cdx.Component{
		BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: p.Name, Version: p.Version,
		Publisher: p.Maintainer, PackageURL: purl, Properties: &props,
	}
	if p.Homepage != "" {
		c.ExternalReferences = &[]cdx.ExternalReference{{Type: cdx.ERTypeWebsite, URL: p.Homepage}}
	}
	return s.add(c)
}

func (s *sbomBuilder) sorted() []cdx.Component {
	out := make([]cdx.Component, 0, len(s.components))
	for _, k := range sortedKeys(s.components) {
		out = append(out, s.components[k])
	}
	return out
}

// dependencies lists every component's (those without any too, as
// CycloneDX asks of a complete graph), each list sorted and unique.
func (s *sbomBuilder) dependencies() []cdx.Dependency {
	refs := map[string]bool{}
	for r := range s.components {
		refs[r] = true
	}
	for r := range s.deps {
		refs[r] = true
	}
	out := make([]cdx.Dependency, 0, len(refs))
	for _, r := range sortedKeys(refs) {
		d := cdx.Dependency{Ref: r}
		if on := s.deps[r]; len(on) > 0 {
			on = append([]string(nil), on...)
			slices.Sort(on)
			on = slices.Compact(on)
			d.Dependencies = &on
		}
		out = append(out, d)
	}
	return out
}

func railyardLicense() *cdx.Licenses {
	return &cdx.Licenses{{License: &cdx.License{ID: License}}}
}

// purlEscape percent-encodes a package URL's version or qualifier value
// ('+' too, as Trivy and Syft write "2.36-9%2Bdeb12u14"; ':' in a digest).
func purlEscape(s string) string {
	return strings.NewReplacer("+", "%2B", ":", "%3A").Replace(url.PathEscape(s))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
