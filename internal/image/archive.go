package image

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotation keys of index.json: containerd's import names the image from
// the first, the OCI image-layout spec defines the second (a tag).
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// ParseRef checks an image name for the archive: a registry host, a
// repository and a tag ("ghcr.io/railyard-io/railyard:0.1.0"). containerd
// does not add Docker's implied docker.io/library/ to a name in an archive,
// so the registry must be explicit for both tools to agree on the name.
func ParseRef(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	if !strings.HasPrefix(ref, tag.RegistryStr()+"/") {
		return name.Tag{}, fmt.Errorf("image name %q: give the registry host explicitly (e.g. ghcr.io/railyard-io/railyard:0.1.0)", ref)
	}
	return tag, nil
}

// WriteArchive writes img as one tar that is both an OCI image layout and a
// docker-archive:
//
//	oci-layout
//	index.json            one manifest, annotated with the name and the tag
//	manifest.json         [{"Config": "blobs/sha256/<config>", "RepoTags": [name], "Layers": [...]}]
//	blobs/sha256/<digest> manifest, config, layers
//
// Every entry is owned by 0:0 with mode 0644 (directories 0755) and mtime.
func WriteArchive(w io.Writer, img v1.Image, ref string, mtime time.Time) error {
	tag, err := ParseRef(ref)
	if err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("archive: manifest: %w", err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("archive: manifest digest: %w", err)
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return fmt.Errorf("archive: media type: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("archive: config: %w", err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("archive: config digest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("archive: layers: %w", err)
	}

	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mediaType,
			Digest:    manifestDigest,
			Size:      int64(len(manifest)),
			Annotations: map[string]string{
				annotationContainerdName: tag.Name(),
				annotationRefName:        tag.TagStr(),
			},
		}},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	type dockerManifest struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	dm := dockerManifest{Config: blobPath(configDigest), RepoTags: []string{tag.Name()}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return fmt.Errorf("archive: layer digest: %w", err)
		}
		dm.Layers = append(dm.Layers, blobPath(d))
	}
	dockerJSON, err := json.Marshal([]dockerManifest{dm})
	if err != nil {
		return fmt.Errorf("archive: manifest.json: %w", err)
	}

	aw := archiveWriter{tw: tar.NewWriter(w), mtime: mtime.UTC().Truncate(time.Second)}
	aw.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	aw.file("index.json", indexJSON)
	aw.file("manifest.json", dockerJSON)
	aw.dir("blobs/")
	aw.dir("blobs/sha256/")
	aw.file(blobPath(manifestDigest), manifest)
	aw.file(blobPath(configDigest), config)
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return fmt.Errorf("archive: layer digest: %w", err)
		}
		size, err := l.Size()
		if err != nil {
			return fmt.Errorf("archive: layer size: %w", err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return fmt.Errorf("archive: layer: %w", err)
		}
		aw.stream(blobPath(d), size, rc)
		if cerr := rc.Close(); cerr != nil && aw.err == nil {
			aw.err = cerr
		}
	}
	if aw.err != nil {
		return fmt.Errorf("archive: %w", aw.err)
	}
	if err := aw.tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// archiveWriter keeps the first error, so WriteArchive reads as a list.
type archiveWriter struct {
	tw    *tar.Writer
	mtime time.Time
	err   error
}

func (a *archiveWriter) header(name string, typ byte, mode, size int64) {
	if a.err != nil {
		return
	}
	a.err = a.tw.WriteHeader(&tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: a.mtime, Format: tar.FormatPAX})
}

func (a *archiveWriter) dir(name string) { a.header(name, tar.TypeDir, 0o755, 0) }

func (a *archiveWriter) file(name string, data []byte) {
	a.header(name, tar.TypeReg, 0o644, int64(len(data)))
	if a.err == nil {
		_, a.err = a.tw.Write(data)
	}
}

func (a *archiveWriter) stream(name string, size int64, r io.Reader) {
	a.header(name, tar.TypeReg, 0o644, size)
	if a.err != nil {
		return
	}
	n, err := io.Copy(a.tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: wrote %d bytes, descriptor says %d", name, n, size)
	}
	a.err = err
}
