// Package nccltopo reads NCCL topology files: the XML that NCCL_TOPO_FILE
// points NCCL at and that clouds ship for VM sizes whose PCIe tree the
// hypervisor hides (Azure's ndv4-topo.xml, ndv5-topo.xml). Inside such a VM
// sysfs shows every GPU and NIC on its own PCI domain, so the PCI tree says
// NODE for every pair of a NUMA node; the file restores the physical
// grouping under (virtual) PCIe switches.
//
// The format, as NCCL's src/graph/xml.cc reads it:
//
//	<system version="1">
//	  <cpu numaid="0" affinity="..." arch="x86_64" vendor="...">
//	    <pci busid="ffff:ff:01.0" class="0x060400" link_speed=".." link_width="16">
//	      <pci busid="0001:00:00.0" class="0x030200" ...><gpu dev="0" sm="80" rank="0" gdr="1"/></pci>
//	      <pci busid="0101:00:00.0" class="0x020700" ...>
//	        <nic><net name="mlx5_0" dev="0" speed="200000" port="1" guid=".." maxconn="131072" gdr="1"/></nic>
//	      </pci>
//	    </pci>
//	  </cpu>
//	</system>
//
// Parse is strict about what classification needs (the root, the version,
// bus IDs, nesting depth and size limits) and ignores elements and
// attributes it does not use, as NCCL does. Bus IDs match case-insensitively
// and whatever the width of the domain ("0001:00:00.0" and
// "00000001:00:00.0" are one function, "18:00.1" is domain 0000); the rules
// are internal/pciaddr's, so a domain of fewer than four digits is refused.
//
// Class derives the distance class of two devices from the file the way
// NCCL computes path types: under one <cpu>, two devices below one bridge
// element are PIX, below nested bridges PXB, with no common bridge PHB;
// devices under different <cpu> elements are NODE when the numaid is the
// same and SYS otherwise.
package nccltopo
