package machine

import (
	"errors"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

func TestParseNormalizesRootsAndDefaults(t *testing.T) {
	d, err := Parse([]byte(`{"id":"x","tree":[
	 {"kind":"root","domain_bus":"quadrant NUMA3","numa":3,"children":[
	  {"kind":"root_port","bdf":"0000:40:01.1","children":[
	   {"kind":"nic","bdf":"0000:41:00.0","rdma_dev":"mlx5_0","class":"0x020700 or 0x020000","netdev":"ibp65s0 (or enp65s0)"}]}]},
	 {"kind":"root","numa":0,"children":[
	  {"kind":"switch","bdf":"ffff:ff:01.0","children":[
	   {"kind":"gpu","bdf":"0001:00:00.0","name":"GPU0"},
	   {"kind":"nic","bdf":"0101:00:00.0","class":"0x020700"}]}]}],
	 "nic_ports":{"note":"8x HDR 200 Gb/s InfiniBand"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range d.Roots {
		names = append(names, r.Address)
	}
	if got := strings.Join(names, ","); got != "pci0000:40,pci0001:00,pci0101:00" {
		t.Fatalf("roots = %s", got)
	}
	nic := d.Roots[0].Children[0].Children[0]
	if nic.Class != 0x020700 || nic.Netdev != "ibp65s0" || nic.LinkLayer != "InfiniBand" || nic.Vendor != 0x15b3 || nic.NUMA != -1 {
		t.Errorf("nic: %+v", nic)
	}
	unnamed := d.Roots[2].Children[0]
	if unnamed.RDMA != "mlx5_1" || unnamed.Netdev != "ib1" || unnamed.Rate != "200 Gb/sec (4X HDR)" || d.Roots[2].NUMA != 0 {
		t.Errorf("unnamed NIC: %+v", unnamed)
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":    `{`,
		"no tree":     `{"id":"x"}`,
		"bad bdf":     `{"tree":[{"kind":"root","children":[{"kind":"gpu","bdf":"zz"}]}]}`,
		"bad vendor":  `{"tree":[{"kind":"root","children":[{"kind":"gpu","bdf":"0000:01:00.0","vendor":"acme"}]}]}`,
		"child array": `{"tree":[{"kind":"root","children":[3]}]}`,
		"top kind":    `{"tree":[{"kind":"gpu","bdf":"0000:01:00.0"}]}`,
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Parse([]byte(`{"id":"x","tree":[]}`)); !errors.Is(err, ErrNoTree) {
		t.Errorf("empty tree: %v, want ErrNoTree", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"tree":[{"kind":"root","domain_bus":"pci0000:00","children":[{"kind":"gpu","bdf":"0000:01:00.0"}]}]}`))
	f.Add([]byte(`{"tree":{"kind":"root","children":[{"kind":"switch","bdf":"ffff:ff:01.0","children":[{"kind":"nic","bdf":"0101:00:00.0","class":"0x020700"}]}]},"topo_matrix":{"columns":["GPU0","NIC0"],"rows":{"GPU0":["X","PIX"]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		d.Walk(func(n, _ *Node) {
			if n.Kind != KindRoot && !pciaddr.IsCanonical(n.Address) {
				t.Fatalf("accepted node with address %q", n.Address)
			}
		})
		for _, r := range d.Roots {
			if !pciaddr.IsCanonicalHostBridge(r.Address) {
				t.Fatalf("accepted root %q", r.Address)
			}
		}
	})
}
