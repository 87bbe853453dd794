package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// maxChart bounds the packaged chart read back (Railyard's is ~40 KiB).
const maxChart = 16 << 20

// PackageChart packages the chart in dir as `helm package --version V
// --app-version V` does, and returns its file name (<name>-<V>.tgz) and
// bytes. Helm writes the content (its Save: Chart.yaml from the
// metadata, values, schema, templates, files; .helmignore applied by the
// loader); Helm stamps every entry with the clock, so the entries are
// then rewritten sorted by path, owned by 0:0 without names, mode 0644
// and timed mtime, in a gzip stream without a name or time: one chart
// directory and version give the same bytes on every run.
func PackageChart(dir, version string, mtime time.Time) (string, []byte, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("chart: load %s: %w", dir, err)
	}
	if len(ch.Dependencies()) > 0 {
		return "", nil, fmt.Errorf("chart: %s has subcharts, which the release does not package", dir)
	}
	ch.Metadata.Version = version
	ch.Metadata.AppVersion = version
	tmp, err := os.MkdirTemp("", "railyard-chart-")
	if err != nil {
		return "", nil, fmt.Errorf("chart: %w", err)
	}
	defer os.RemoveAll(tmp)
	saved, err := chartutil.Save(ch, tmp)
	if err != nil {
		return "", nil, fmt.Errorf("chart: save: %w", err)
	}
	raw, err := os.ReadFile(saved)
	if err != nil {
		return "", nil, fmt.Errorf("chart: %w", err)
	}
	tgz, err := normalizeTgz(raw, mtime)
	if err != nil {
		return "", nil, fmt.Errorf("chart: %w", err)
	}
	return filepath.Base(saved), tgz, nil
}

// normalizeTgz rewrites a gzip tar of regular files deterministically.
func normalizeTgz(raw []byte, mtime time.Time) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	files, err := tarEntries(io.LimitReader(zr, maxChart))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	mtime = mtime.UTC().Truncate(time.Second)
	for _, n := range names {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
