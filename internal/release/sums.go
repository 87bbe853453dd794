package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// SumsFile is the checksums file of a release, in the format of GNU
// coreutils' sha256sum: `sha256sum -c SHA256SUMS` in the release
// directory checks every artifact.
const SumsFile = "SHA256SUMS"

// FileSHA256 returns the hex SHA-256 of a file's bytes.
func FileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("sha256: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("sha256: %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Sums returns the SHA256SUMS document of files in dir (by name): one
// "<hex>  <name>" line each, sorted by name.
func Sums(dir string, names []string) ([]byte, error) {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var b bytes.Buffer
	for i, n := range sorted {
		if n == "" || n != filepath.Base(n) || strings.ContainsAny(n, "\n\\") {
			return nil, fmt.Errorf("sha256sums: file name %q: want a plain name in the release directory", n)
		}
		if i > 0 && n == sorted[i-1] {
			return nil, fmt.Errorf("sha256sums: %s twice", n)
		}
		sum, err := FileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return b.Bytes(), nil
}

var sumLineRE = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// ParseSums reads a SHA256SUMS document: file name -> hex SHA-256.
func ParseSums(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		m := sumLineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			return nil, fmt.Errorf("sha256sums: line %d: %q is not \"<sha256>  <name>\"", n, clip(sc.Text()))
		}
		if _, dup := out[m[2]]; dup {
			return nil, fmt.Errorf("sha256sums: line %d: %s twice", n, m[2])
		}
		out[m[2]] = m[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sha256sums: %w", err)
	}
	return out, nil
}

// Verify checks a release directory as `sha256sum -c SHA256SUMS` does,
// and more: every file it lists has its digest, and every other file of
// the directory but SHA256SUMS is listed. It returns the names checked.
func Verify(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	sums, err := ParseSums(raw)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	for _, e := range entries {
		if _, ok := sums[e.Name()]; !ok && e.Name() != SumsFile {
			return nil, fmt.Errorf("verify: %s is not in %s", e.Name(), SumsFile)
		}
	}
	names := sortedKeys(sums)
	for _, n := range names {
		got, err := FileSHA256(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("verify: %w", err)
		}
		if got != sums[n] {
			return nil, fmt.Errorf("verify: %s has sha256 %s, %s says %s", n, got, SumsFile, sums[n])
		}
	}
	return names, nil
}
