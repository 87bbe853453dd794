package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
)

// A .deb is an ar archive (deb(5)): "debian-binary", then control.tar and
// data.tar, each possibly compressed (bookworm's are .xz).

// maxUnpacked bounds a member's decompressed size (libc6's data.tar is
// 13 MiB).
const maxUnpacked = 256 << 20

// maxLinks bounds the symbolic links followed to resolve one path.
const maxLinks = 16

// debFiles returns p's Files, its copyright file and its status.d stanza
// from the .deb's bytes.
func debFiles(p DebianPackage, deb []byte) ([]File, error) {
	members, err := arMembers(deb)
	if err != nil {
		return nil, err
	}
	data, err := member(members, "data.tar")
	if err != nil {
		return nil, err
	}
	tree, err := readTree(data)
	if err != nil {
		return nil, fmt.Errorf("data.tar: %w", err)
	}
	control, err := member(members, "control.tar")
	if err != nil {
		return nil, err
	}
	ctree, err := readTree(control)
	if err != nil {
		return nil, fmt.Errorf("control.tar: %w", err)
	}
	c, ok := ctree["control"]
	if !ok || c.hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("control.tar: no control file")
	}
	stanza, err := statusStanza(c.data)
	if err != nil {
		return nil, err
	}
	want := append(append([]string(nil), p.Files...), "usr/share/doc/"+p.Name+"/copyright")
	files := make([]File, 0, len(want)+1)
	for _, name := range want {
		e, err := tree.resolve(name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: name, Mode: e.hdr.Mode & 0o777, Data: e.data})
	}
	files = append(files, File{Path: statusDir + "/" + p.Name, Mode: 0o644, Data: stanza})
	return files, nil
}

// arMembers splits an ar archive into its members (the common format:
// "!<arch>\n", 60-byte headers, data padded to an even length).
func arMembers(b []byte) (map[string][]byte, error) {
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(b, []byte(magic)) {
		return nil, fmt.Errorf("not a .deb: no ar header")
	}
	out := map[string][]byte{}
	for off := len(magic); off < len(b); {
		if len(b)-off < 60 {
			return nil, fmt.Errorf("ar: truncated header at %d", off)
		}
		h := b[off : off+60]
		if string(h[58:60]) != "`\n" {
			return nil, fmt.Errorf("ar: bad header at %d", off)
		}
		name := strings.TrimSuffix(strings.TrimRight(string(h[0:16]), " "), "/")
		size, err := strconv.ParseInt(strings.TrimRight(string(h[48:58]), " "), 10, 64)
		if err != nil || size < 0 || size > int64(len(b)-off-60) {
			return nil, fmt.Errorf("ar: %s: bad size %q", name, h[48:58])
		}
		off += 60
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("ar: %s twice", name)
		}
		out[name] = b[off : off+int(size)]
		off += int(size) + int(size%2)
	}
	return out, nil
}

// member returns the decompressed bytes of the member named base plus one
// of the compressions dpkg-deb writes that this builder reads.
func member(members map[string][]byte, base string) ([]byte, error) {
	for name, b := range members {
		if !strings.HasPrefix(name, base) {
			continue
		}
		switch strings.TrimPrefix(name, base) {
		case "":
			return b, nil
		case ".gz":
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return readBounded(zr, name)
		case ".xz":
			return unxz(b, name)
		default:
			return nil, fmt.Errorf("%s: compression not supported (gzip, xz or none)", name)
		}
	}
	return nil, fmt.Errorf("no %s member", base)
}

func readBounded(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxUnpacked+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxUnpacked {
		return nil, fmt.Errorf("%s: over %d bytes unpacked", name, maxUnpacked)
	}
	return b, nil
}

// unxz decompresses an xz member (the standard library has no xz
// reader; github.com/ulikunitz/xz is pure Go, so the build needs no xz
// command).
func unxz(b []byte, name string) ([]byte, error) {
	r, err := xz.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return readBounded(r, name)
}

type treeEntry struct {
	hdr  tar.Header
	data []byte
}

// tree is a package's tar by clean relative path ("usr/sbin/smpquery").
type tree map[string]treeEntry

func readTree(b []byte) (tree, error) {
	t := tree{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == "/" {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("entry %q outside the package", h.Name)
		}
		var data []byte
		if h.Typeflag == tar.TypeReg {
			if data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		t[name] = treeEntry{hdr: *h, data: data}
	}
}

// resolve returns the regular file at name, following symbolic links
// (relative or absolute, in any component of the path) and hard links
// inside the package; a link leading outside it is an error.
func (t tree) resolve(name string) (treeEntry, error) {
	links := 0
	rest := strings.Split(name, "/")
	cur := ""
	for len(rest) > 0 {
		next := path.Join(cur, rest[0])
		rest = rest[1:]
		if next == ".." || strings.HasPrefix(next, "../") {
			return treeEntry{}, fmt.Errorf("%s: a link leads outside the package", name)
		}
		e, ok := t[next]
		if !ok {
			return treeEntry{}, fmt.Errorf("%s: not in the package", name)
		}
		switch e.hdr.Typeflag {
		case tar.TypeSymlink, tar.TypeLink:
			if links++; links > maxLinks {
				return treeEntry{}, fmt.Errorf("%s: more than %d links", name, maxLinks)
			}
			target := e.hdr.Linkname
			switch {
			case e.hdr.Typeflag == tar.TypeLink: // hard link: a path in the archive
				target = strings.TrimPrefix(target, "./")
			case path.IsAbs(target):
				target = strings.TrimPrefix(target, "/")
			default:
				target = path.Join(path.Dir(next), target)
			}
			target = path.Clean(target)
			rest = append(strings.Split(target, "/"), rest...)
			cur = ""
		case tar.TypeDir:
			cur = next
		case tar.TypeReg:
			if len(rest) > 0 {
				return treeEntry{}, fmt.Errorf("%s: %s is a file", name, next)
			}
			return e, nil
		default:
			return treeEntry{}, fmt.Errorf("%s: %s is not a file, a directory or a link", name, next)
		}
	}
	return treeEntry{}, fmt.Errorf("%s: a directory", name)
}
