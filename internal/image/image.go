package image

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation and label keys the image carries (image-spec
// annotations.md); the same values are both config labels (what `docker
// inspect` and `crictl inspecti` show) and manifest annotations.
const (
	KeySource   = "org.opencontainers.image.source"
	KeyRevision = "org.opencontainers.image.revision"
	KeyVersion  = "org.opencontainers.image.version"
	KeyTitle    = "org.opencontainers.image.title"
	KeyCreated  = "org.opencontainers.image.created"
	// LabelDebianPackages lists the Debian packages of an image's Debian
	// layer as "name=version ..." (only on such an image).
	LabelDebianPackages = "io.railyard.image.debian-packages"
)

// NonRootUser is the image's default user, uid:gid 65532 (the "nonroot"
// user of distroless images). The chart overrides it where a container must
// write root-owned host directories (docs/install.md, "Security").
const NonRootUser = "65532:65532"

// Meta describes the image beyond its files.
type Meta struct {
	Arch     string // GOARCH, e.g. amd64
	Version  string
	Revision string
	Source   string // repository URL
	Created  time.Time
	// Cmd is the default command (containers of the chart set their own).
	Cmd []string
	// Debian, when set, is a second layer above the binaries' (hack/image
	// --infiniband-diags): PATH then also has /usr/sbin and the image is
	// labelled with the packages.
	Debian *DebianLayer
}

// DebianLayer is an uncompressed layer of files from Debian packages.
type DebianLayer struct {
	Tar      []byte
	Packages []DebianPackage
}

// Assemble builds an OCI image (OCI manifest and config media types) of one
// gzip layer from an uncompressed layer tar, and a second one from
// m.Debian's when set. The result depends only on its arguments.
func Assemble(layerTar []byte, m Meta) (v1.Image, error) {
	if m.Arch == "" {
		return nil, fmt.Errorf("image: no architecture")
	}
	created := v1.Time{Time: m.Created.UTC().Truncate(time.Second)}
	layers := []mutate.Addendum{{MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "railyard hack/image (go-containerregistry)", Comment: "static railyard binaries"}}}
	tars := [][]byte{layerTar}
	env := "PATH=/usr/local/bin"
	if m.Debian != nil {
		layers = append(layers, mutate.Addendum{MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: "railyard hack/image (Debian packages, verified by SHA256)", Comment: PackageList(m.Debian.Packages)}})
		tars = append(tars, m.Debian.Tar)
		env = "PATH=" + DebianPath
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i := range layers {
		t := tars[i]
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(t)), nil
		}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("image: layer: %w", err)
		}
		layers[i].Layer = layer
		if img, err = mutate.Append(img, layers[i]); err != nil {
			return nil, fmt.Errorf("image: append layer: %w", err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = m.Arch
	cf.OS = "linux"
	cf.Created = created
	labels := Labels(m)
	cf.Config = v1.Config{
		Env:        []string{env},
		User:       NonRootUser,
		WorkingDir: "/",
		Cmd:        m.Cmd,
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	annotated, ok := mutate.Annotations(img, labels).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("image: annotations: not an image")
	}
	return annotated, nil
}

// Labels are the OCI labels and manifest annotations of an image.
func Labels(m Meta) map[string]string {
	l := map[string]string{
		KeySource:   m.Source,
		KeyRevision: m.Revision,
		KeyVersion:  m.Version,
		KeyTitle:    "railyard",
		KeyCreated:  m.Created.UTC().Truncate(time.Second).Format(time.RFC3339),
	}
	if m.Debian != nil {
		l[LabelDebianPackages] = PackageList(m.Debian.Packages)
	}
	return l
}
