package nccltopo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// FuzzParse: no input panics or hangs Parse, and for any accepted file the
// class of every pair of indexed devices is a known class and symmetric.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.xml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add(`<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"><pci busid="0000:02:00.0"/></pci></cpu></system>`)
	f.Add(`<system version="1"><cpu><nic><net name="x"/></nic></cpu></system>`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		ix := NewIndex(s)
		var devs []Device
		for _, a := range append(append([]pciaddr.Addr{}, ix.GPUs...), ix.NICs...) {
			d, ok := ix.ByBusID(a.String())
			if !ok {
				t.Fatalf("indexed %s not found by its own bus ID", a)
			}
			devs = append(devs, d)
		}
		for _, a := range devs {
			for _, b := range devs {
				c := Class(a, b)
				if c < topology.PIX || c > topology.SYS || c != Class(b, a) {
					t.Fatalf("Class = %v, reversed %v", c, Class(b, a))
				}
			}
		}
	})
}
