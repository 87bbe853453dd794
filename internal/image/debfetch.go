package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// Why DebianFiles failed, wrapped by its errors.
var (
	// ErrDownload: the mirror could not be reached or did not serve the
	// package (a 404 once a point release replaced it).
	ErrDownload = errors.New("download failed")
	// ErrChecksum: the bytes served are not the pinned package.
	ErrChecksum = errors.New("not the pinned package")
)

// DebianOptions say where DebianFiles gets packages.
type DebianOptions struct {
	// Mirror is the Debian archive's URL (DefaultDebianMirror when empty).
	Mirror string
	// CacheDir keeps each verified .deb under its file name; a package
	// found there with the pinned SHA256 is not downloaded again. Required.
	CacheDir string
	// Client downloads (a client with a 5-minute timeout when nil).
	Client *http.Client
}

var (
	debNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// maxDeb bounds a package's size (the pinned ones are under 3 MiB).
const maxDeb = 64 << 20

func checkPackage(p DebianPackage) error {
	switch {
	case !debNameRE.MatchString(p.Name):
		return fmt.Errorf("package name %q", p.Name)
	case !sha256RE.MatchString(p.SHA256):
		return fmt.Errorf("%s: SHA256 %q: want 64 lowercase hex digits", p.Name, p.SHA256)
	case p.Size <= 0 || p.Size > maxDeb:
		return fmt.Errorf("%s: size %d", p.Name, p.Size)
	case path.Clean(p.Path) != p.Path || path.IsAbs(p.Path) || strings.HasPrefix(p.Path, "..") || !strings.HasSuffix(p.Path, ".deb"):
		return fmt.Errorf("%s: path %q: want a relative .deb path under the mirror", p.Name, p.Path)
	case len(p.Files) == 0:
		return fmt.Errorf("%s: no files", p.Name)
	}
	return nil
}

// DebianFiles returns the layer files of pkgs: each package's Files, its
// copyright file and its control stanza under var/lib/dpkg/status.d/. Each
// .deb comes from the cache or the mirror and is used only once its size
// and SHA256 are the pinned ones.
func DebianFiles(ctx context.Context, pkgs []DebianPackage, o DebianOptions) ([]File, error) {
	if o.CacheDir == "" {
		return nil, fmt.Errorf("debian: no cache directory")
	}
	var files []File
	for _, p := range pkgs {
		if err := checkPackage(p); err != nil {
			return nil, fmt.Errorf("debian: %w", err)
		}
		deb, err := fetchDeb(ctx, p, o)
		if err != nil {
			return nil, err
		}
		fs, err := debFiles(p, deb)
		if err != nil {
			return nil, fmt.Errorf("debian: %s %s: %w", p.Name, p.Version, err)
		}
		files = append(files, fs...)
	}
	return files, nil
}

// fetchDeb returns the verified bytes of p's .deb, from the cache or the
// mirror (then written to the cache with atomicfile, so the cache never
// holds a partial package).
func fetchDeb(ctx context.Context, p DebianPackage, o DebianOptions) ([]byte, error) {
	cached := filepath.Join(o.CacheDir, path.Base(p.Path))
	if b, err := inputfile.Read(cached, maxDeb); err == nil && verifyDeb(p, b) == nil {
		return b, nil
	}
	// Absent, unreadable or not the pinned bytes (an interrupted copy, a
	// different build of the same name): download it again.
	mirror := strings.TrimSuffix(o.Mirror, "/")
	if mirror == "" {
		mirror = DefaultDebianMirror
	}
	url := mirror + "/" + p.Path
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Minute}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("debian: %s: %w", p.Name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("debian: %s %s: %w: %w (or put %s in %s)", p.Name, p.Version, ErrDownload, err, path.Base(p.Path), o.CacheDir)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = ": the mirror no longer serves this version (a newer point release replaced it?); update the pinned table from the current Packages index"
		}
		return nil, fmt.Errorf("debian: %s %s: %w: GET %s: %s%s", p.Name, p.Version, ErrDownload, url, resp.Status, hint)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, p.Size+1))
	if err != nil {
		return nil, fmt.Errorf("debian: %s %s: %w: GET %s: %w", p.Name, p.Version, ErrDownload, url, err)
	}
	if err := verifyDeb(p, b); err != nil {
		return nil, fmt.Errorf("debian: GET %s: %w", url, err)
	}
	if err := atomicfile.WriteFile(cached, b, 0o644); err != nil {
		return nil, fmt.Errorf("debian: cache: %w", err)
	}
	return b, nil
}

// verifyDeb checks b against p's pinned size and SHA256.
func verifyDeb(p DebianPackage, b []byte) error {
	sum := sha256.Sum256(b)
	if int64(len(b)) != p.Size || hex.EncodeToString(sum[:]) != p.SHA256 {
		return fmt.Errorf("%s %s: %w: %d bytes, sha256 %x; pinned %d bytes, sha256 %s", p.Name, p.Version, ErrChecksum, len(b), sum, p.Size, p.SHA256)
	}
	return nil
}

// statusStanza is the package's control file as dpkg's status database
// has it: with "Status: install ok installed" after the Package field.
func statusStanza(control []byte) ([]byte, error) {
	text := strings.TrimRight(string(control), "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(first, "Package: ") {
		return nil, fmt.Errorf("control file: first field %q, want Package", clip(first))
	}
	var b bytes.Buffer
	b.WriteString(first + "\nStatus: install ok installed\n")
	if rest != "" {
		b.WriteString(rest + "\n")
	}
	return b.Bytes(), nil
}

// clip bounds text quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
