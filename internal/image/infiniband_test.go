package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/ibneighbor"
)

// The tests here use the real pinned Debian packages: downloaded from
// deb.debian.org into the repository's _output/debs (the cache `make
// images-infiniband` uses) on the first run, verified by SHA256, and
// skipped with the reason when they can be neither downloaded nor found
// there. Absent on this machine: any RDMA hardware and the RDMA
// subsystem (no ib_umad: no /sys/class/infiniband_mad, no
// /dev/infiniband/umad*), so smpquery is only ever run against a port
// that does not exist.

// realDebianLayer returns the uncompressed infiniband-diags layer of arch.
func realDebianLayer(t *testing.T, arch string) []byte {
	t.Helper()
	pkgs, err := InfinibandDiags(arch)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(repoRoot(t), "_output", "debs")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	layer, err := DebianLayerTar(ctx, pkgs, DebianOptions{CacheDir: cache}, testTime)
	if errors.Is(err, ErrDownload) {
		t.Skipf("the pinned Debian packages are neither in %s nor downloadable: %v", cache, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return layer
}

// layerFiles reads an uncompressed layer: path -> regular file.
func layerFiles(t *testing.T, layer []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
			t.Errorf("%s: type %c, want only files and directories", h.Name, h.Typeflag)
		}
		out[h.Name] = h
	}
}

// extractLayer writes a layer into dir as a container runtime unpacks it.
func extractLayer(t *testing.T, layer []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(h.Mode))
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestInfinibandDiagsLayerIsTheSameBytesTwice(t *testing.T) {
	first := realDebianLayer(t, "amd64")
	second := realDebianLayer(t, "amd64") // from the cache
	if !bytes.Equal(first, second) {
		t.Fatal("two infiniband-diags layers from the same packages differ")
	}
	for name, h := range layerFiles(t, first) {
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(testTime) || h.Mode&^0o777 != 0 {
			t.Errorf("%s: %d:%d %q %q %v %o", name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, h.Mode)
		}
	}
}

// TestInfinibandDiagsLayerIsClosed reads every ELF file of each
// architecture's layer: its program interpreter and every library it
// needs (DT_NEEDED) are in the layer, where the loader looks for them
// without an ld.so.cache (the multiarch directories, then /lib and
// /usr/lib), and smpquery is built for the architecture.
func TestInfinibandDiagsLayerIsClosed(t *testing.T) {
	for arch, a := range map[string]struct {
		triplet string
		machine elf.Machine
	}{"amd64": {"x86_64-linux-gnu", elf.EM_X86_64}, "arm64": {"aarch64-linux-gnu", elf.EM_AARCH64}} {
		t.Run(arch, func(t *testing.T) {
			layer := realDebianLayer(t, arch)
			files := map[string][]byte{}
			tr := tar.NewReader(bytes.NewReader(layer))
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Typeflag == tar.TypeReg {
					b, err := io.ReadAll(tr)
					if err != nil {
						t.Fatal(err)
					}
					files[h.Name] = b
				}
			}
			dirs := []string{"lib/" + a.triplet, "usr/lib/" + a.triplet, "lib", "usr/lib"}
			elves := 0
			for name, b := range files {
				if !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
					continue
				}
				elves++
				f, err := elf.NewFile(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if f.Machine != a.machine {
					t.Errorf("%s: machine %v, want %v", name, f.Machine, a.machine)
				}
				interp := ""
				for _, p := range f.Progs {
					if p.Type == elf.PT_INTERP {
						s, err := io.ReadAll(p.Open())
						if err != nil {
							t.Fatal(err)
						}
						interp = strings.TrimRight(string(s), "\x00")
					}
				}
				if name == "usr/sbin/smpquery" && interp == "" {
					t.Errorf("smpquery has no program interpreter")
				}
				if interp != "" && files[strings.TrimPrefix(interp, "/")] == nil {
					t.Errorf("%s: interpreter %s is not in the layer", name, interp)
				}
				libs, err := f.ImportedLibraries()
				if err != nil {
					t.Fatal(err)
				}
				for _, lib := range libs {
					found := strings.HasPrefix(lib, "ld-linux") // the loader itself, by its soname
					for _, d := range dirs {
						found = found || files[path.Join(d, lib)] != nil
					}
					if !found {
						t.Errorf("%s needs %s: not in %v", name, lib, dirs)
					}
				}
			}
			if elves != 5 || files["usr/sbin/smpquery"] == nil {
				t.Errorf("%d ELF files, want smpquery, the loader, libc, libibmad and libibumad", elves)
			}
			for _, pkg := range []string{"infiniband-diags", "libibmad5", "libibumad3", "libc6"} {
				if len(files["usr/share/doc/"+pkg+"/copyright"]) == 0 || !bytes.Contains(files["var/lib/dpkg/status.d/"+pkg], []byte("Package: "+pkg+"\nStatus: install ok installed\n")) {
					t.Errorf("%s: no copyright file or status.d stanza", pkg)
				}
			}
		})
	}
}

// chroot runs the layer's commands inside it, as the container does
// (found in the image's PATH, /usr/sbin), through ibneighbor's real Exec.
type chroot struct{ root string }

func (c chroot) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return ibneighbor.Exec{}.Run(ctx, "chroot", append([]string{c.root, "/usr/sbin/" + name}, args...)...)
}

// TestInfinibandDiagsSmpqueryLoadsAndFailsAsIbneighborSaysWithoutRDMA
// unpacks the layer for this machine's architecture into a directory and
// runs its real smpquery there with chroot, as ibneighbor.Query runs it
// in the fabric container. Absent: the RDMA subsystem and any port (the
// chroot has no /sys and no /dev; this host has neither
// /sys/class/infiniband_mad nor /dev/infiniband/umad*), so the query
// must fail opening mlx5_0 port 1, in smpquery's own words, which Query
// classifies as ErrQuery with the umad hint. That proves the binary, its
// loader and its libraries load from the layer alone; a query of a real
// port is untested here.
func TestInfinibandDiagsSmpqueryLoadsAndFailsAsIbneighborSaysWithoutRDMA(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root: run as root to run the image's smpquery")
	}
	if _, err := exec.LookPath("chroot"); err != nil {
		t.Skip("no chroot command")
	}
	root := t.TempDir()
	extractLayer(t, realDebianLayer(t, runtime.GOARCH), root)

	out, err := exec.CommandContext(t.Context(), "chroot", root, "/usr/sbin/smpquery", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BUILD VERSION: 44.0") {
		t.Fatalf("smpquery --version in the layer: %v\n%s", err, out)
	}
	nb, err := ibneighbor.Query(t.Context(), chroot{root}, "mlx5_0", 1)
	t.Logf("Query: %v", err)
	if !errors.Is(err, ibneighbor.ErrQuery) || errors.Is(err, ibneighbor.ErrNotInstalled) || nb.ChassisID != "" {
		t.Fatalf("Query without an RDMA port: %+v, %v; want ErrQuery", nb, err)
	}
	for _, want := range []string{
		// its iberror line ("/usr/sbin/smpquery: iberror: failed: ..." on stdout)
		"mlx5_0 port 1: smpquery failed: smpquery -D nodeinfo 0,1: failed: Failed to open 'mlx5_0' port '1' (",
		"exit status 255",                                      // ibexit(-1)
		"ibwarn: [", "get_abi_version: can't read ABI version", // libibumad's first words on stderr, clipped
		"smpquery needs read-write access to the port's umad device", // Query's hint
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Query's error lacks %q", want)
		}
	}
}

// TestInfinibandDiagsImageRunsSmpqueryInContainerd imports an image of
// the two layers (railyard-cni-install standing in for the binaries, and
// the real infiniband-diags layer) into a scratch containerd 1.6 and runs
// `smpquery` by name in a container: the image's PATH finds it, the
// layers stack, and it fails opening the absent port as in the chroot
// (absent: the RDMA subsystem; the container has containerd's default
// /sys and /dev, neither with InfiniBand).
func TestInfinibandDiagsImageRunsSmpqueryInContainerd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containerd")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("builds an amd64 image")
	}
	sock := scratchContainerd(t)
	debLayer := realDebianLayer(t, "amd64")
	pkgs, err := InfinibandDiags("amd64")
	if err != nil {
		t.Fatal(err)
	}
	layer := cniInstallLayer(t)
	m := testMeta()
	m.Debian = &DebianLayer{Tar: debLayer, Packages: pkgs}
	img, err := Assemble(layer, m)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "railyard.local/test/railyard:0.1.0" + InfinibandDiagsTagSuffix
	archive := archiveFile(t, img, ref)
	ctr := func(args ...string) (string, error) { return ctrIn(sock, args...) }
	if out, err := ctr("images", "import", "--snapshotter", "native", archive); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = ctr("images", "rm", ref) })
	out, err := ctr("run", "--rm", "--snapshotter", "native", ref, "railyard-image-test-smpquery",
		"smpquery", "-C", "mlx5_0", "-P", "1", "-D", "nodeinfo", "0,1")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 255 || !strings.Contains(out, "smpquery: iberror: failed: Failed to open 'mlx5_0' port '1'") {
		t.Fatalf("smpquery in the container: %v, want exit status 255 and its iberror line:\n%s", err, out)
	}
	t.Logf("smpquery in the container (exit 255):\n%s", out)
}
