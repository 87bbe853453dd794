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
	// BenchToolsImage is BusyboxImage plus a layer with the host's iperf3
	// and the shared libraries it loads (Debian's package, installed by
	// hack/cluster/install-packages.sh), for `bench plan`'s iperf3 pair.
	// Built only where the host has iperf3.
	BenchToolsImage = "railyard.local/e2e/bench-tools:1"
)

// benchTools are the host executables BenchToolsImage carries.
var benchTools = []string{"iperf3"}

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
// and PauseImage, built from the static busybox binary at busyboxPath, and
// BenchToolsImage where the host has its tools, and the names it holds.
func buildImageArchive(busyboxPath string) ([]byte, []string, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, nil, fmt.Errorf("image: %w", err)
	}
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("image: %s --list-full: %w", busyboxPath, err)
	}
	layer, err := busyboxLayer(bin, strings.Fields(string(out)))
	if err != nil {
		return nil, nil, err
	}
	layerBlob := newBlob("application/vnd.oci.image.layer.v1.tar", layer)

	type image struct {
		name   string
		config map[string]any
		layers []blob
	}
	images := []image{
		{BusyboxImage, map[string]any{"Cmd": []string{"sh"}}, []blob{layerBlob}},
		{PauseImage, map[string]any{"Entrypoint": []string{"/bin/sleep", "2147483647"}}, []blob{layerBlob}},
	}
	if tools, err := toolPaths(benchTools); err == nil {
		toolsLayer, err := hostFilesLayer(tools)
		if err != nil {
			return nil, nil, err
		}
		images = append(images, image{BenchToolsImage, map[string]any{"Cmd": []string{"sh"}},
			[]blob{layerBlob, newBlob("application/vnd.oci.image.layer.v1.tar", toolsLayer)}})
	}
	var blobs []blob
	var manifests []descriptor
	var names []string
	for _, img := range images {
		names = append(names, img.name)
		cfg := img.config
		cfg["Env"] = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		var diffIDs []string
		var layers []descriptor
		for _, l := range img.layers {
			diffIDs, layers = append(diffIDs, l.desc.Digest), append(layers, l.desc)
			blobs = append(blobs, l)
		}
		cfgJSON, err := json.Marshal(map[string]any{
			"architecture": runtime.GOARCH,
			"os":           "linux",
			"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
			"config":       cfg,
			"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
		})
		if err != nil {
			return nil, nil, fmt.Errorf("image: %w", err)
		}
		cfgBlob := newBlob("application/vnd.oci.image.config.v1+json", cfgJSON)
		manJSON, err := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        cfgBlob.desc,
			"layers":        layers,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("image: %w", err)
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
		return nil, nil, fmt.Errorf("image: %w", err)
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
		return nil, nil, fmt.Errorf("image: %w", err)
	}
	if err := add("index.json", index); err != nil {
		return nil, nil, fmt.Errorf("image: %w", err)
	}
	seen := map[string]bool{}
	for _, b := range blobs {
		if seen[b.desc.Digest] {
			continue
		}
		seen[b.desc.Digest] = true
		if err := add("blobs/sha256/"+strings.TrimPrefix(b.desc.Digest, "sha256:"), b.data); err != nil {
			return nil, nil, fmt.Errorf("image: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, fmt.Errorf("image: %w", err)
	}
	return buf.Bytes(), names, nil
}

// toolPaths finds each executable on PATH and adds the shared libraries
// and the dynamic loader it needs, as ldd lists them.
func toolPaths(names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		bin, err := exec.LookPath(n)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		libs, err := exec.Command("ldd", bin).Output()
		if err != nil {
			return nil, fmt.Errorf("image: ldd %s: %w", bin, err)
		}
		for _, p := range append([]string{bin}, lddPaths(string(libs))...) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// lddPaths are the absolute paths in ldd's output: "libc.so.6 =>
// /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and the loader's
// "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has none.
func lddPaths(out string) []string {
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/") {
			paths = append(paths, f[2])
		} else if len(f) >= 1 && strings.HasPrefix(f[0], "/") {
			paths = append(paths, f[0])
		}
	}
	return paths
}

// hostFilesLayer returns an uncompressed layer tar with each host file at
// its own path, as a regular executable file (a symlink's target content:
// the loader at /lib64/ld-linux-x86-64.so.2 is one on Debian).
func hostFilesLayer(paths []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
		name := strings.TrimPrefix(path.Clean(p), "/")
		var parents []string
		for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: epoch}); err != nil {
				return nil, fmt.Errorf("image layer: %w", err)
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: epoch}); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
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
