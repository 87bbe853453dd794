//go:build e2e

package framework

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"
	"time"
)

// Image names the framework imports into containerd. Pods must use
// imagePullPolicy Never: no registry is reachable.
const (
	// BusyboxImage is a one-layer image with a static busybox and all its
	// applets; its default command is sh.
	BusyboxImage = "railyard.local/e2e/busybox:1"
	// PauseImage shares BusyboxImage's layer and only sleeps; it is
	// containerd's sandbox image.
	PauseImage = "railyard.local/e2e/pause:1"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type blob struct {
	desc descriptor
	data []byte
}

func newBlob(mediaType string, data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{desc: descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}, data: data}
}

// buildImageArchive returns an OCI image layout tarball holding BusyboxImage
// and PauseImage, built from the static busybox binary at busyboxPath.
func buildImageArchive(busyboxPath string) ([]byte, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("image: %s --list-full: %w", busyboxPath, err)
	}
	layer, err := busyboxLayer(bin, strings.Fields(string(out)))
	if err != nil {
		return nil, err
	}
	layerBlob := newBlob("application/vnd.oci.image.layer.v1.tar", layer)

	blobs := []blob{layerBlob}
	var manifests []descriptor
	for _, img := range []struct {
		name   string
		config map[string]any
	}{
		{BusyboxImage, map[string]any{"Cmd": []string{"sh"}}},
		{PauseImage, map[string]any{"Entrypoint": []string{"/bin/sleep", "2147483647"}}},
	} {
		cfg := img.config
		cfg["Env"] = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		cfgJSON, err := json.Marshal(map[string]any{
			"architecture": runtime.GOARCH,
			"os":           "linux",
			"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
			"config":       cfg,
			"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerBlob.desc.Digest}},
		})
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		cfgBlob := newBlob("application/vnd.oci.image.config.v1+json", cfgJSON)
		manJSON, err := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        cfgBlob.desc,
			"layers":        []descriptor{layerBlob.desc},
		})
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		manBlob := newBlob("application/vnd.oci.image.manifest.v1+json", manJSON)
		blobs = append(blobs, cfgBlob, manBlob)
		d := manBlob.desc
		d.Annotations = map[string]string{
			"io.containerd.image.name":          img.name,
			"org.opencontainers.image.ref.name": img.name[strings.LastIndex(img.name, ":")+1:],
		}
		manifests = append(manifests, d)
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": manifests})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := add("index.json", index); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	seen := map[string]bool{}
	for _, b := range blobs {
		if seen[b.desc.Digest] {
			continue
		}
		seen[b.desc.Digest] = true
		if err := add("blobs/sha256/"+strings.TrimPrefix(b.desc.Digest, "sha256:"), b.data); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return buf.Bytes(), nil
}

// busyboxLayer returns an uncompressed layer tar with bin/busybox, a symlink
// for every applet (paths as `busybox --list-full` prints them) and the
// usual empty top-level directories.
func busyboxLayer(bin []byte, applets []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	var mkdir func(dir string, mode int64) error
	mkdir = func(dir string, mode int64) error {
		if dir == "." || dir == "" || dirs[dir] {
			return nil
		}
		if err := mkdir(path.Dir(dir), 0o755); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: mode, Typeflag: tar.TypeDir, ModTime: epoch})
	}
	for _, d := range []string{"bin", "dev", "etc", "proc", "root", "sys", "usr", "usr/bin", "usr/sbin", "sbin", "var", "run"} {
		if err := mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
	}
	if err := mkdir("tmp", 0o1777); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg, ModTime: epoch}); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	for _, a := range applets {
		a = strings.TrimPrefix(path.Clean(a), "/")
		if a == "bin/busybox" || strings.HasPrefix(a, "..") || a == "." {
			continue
		}
		if err := mkdir(path.Dir(a), 0o755); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: a, Linkname: "/bin/busybox", Mode: 0o777, Typeflag: tar.TypeSymlink, ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return buf.Bytes(), nil
}
