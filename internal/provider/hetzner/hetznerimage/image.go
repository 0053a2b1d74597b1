package hetznerimage

import "github.com/egress-proxies/egress/internal/vm/imagetest"

// What makes the Hetzner-shaped root file system a Hetzner server as
// Debian's cloud-init sees it, in a container. On a Hetzner server the
// firmware's SMBIOS says system-manufacturer "Hetzner" and a
// system-serial-number that is the server's id: ds-identify (the systemd
// generator that decides whether cloud-init runs at all) finds the
// Hetzner datasource by the first, and the datasource itself refuses to
// run unless both are there and the serial is the metadata's instance-id.
// A container has no SMBIOS of its own, and cloud-init reads none in a
// container on purpose (cloudinit.dmi.read_dmi_data returns None whenever
// it runs in one, since the host's would be wrong). So the test stands in
// for the firmware, as it stands in for the metadata service, in two
// places and nowhere else: cloud.cfg.d names the Hetzner datasource, so
// ds-identify enables it without reading DMI; and a module the test adds
// to the tree answers cloud-init's DMI reads of those two fields from
// files the test writes into each boot's copy (imagetest.DMIDir), the values
// Hetzner's firmware gives. Everything else is Debian's cloud-init as
// packaged: the datasource, its reads of the metadata service, its
// user-data processing, write_files and the per-boot scripts.
//
// The network is configured from outside the container, as Hetzner's
// DHCP configures a server's: cloud-init's own network configuration is
// off, since the container has no DHCP server and its interface is set
// already.

// Release is the Hetzner-shaped boot: Debian 13 as Hetzner's
// debian-13 image has it, with Debian's cloud-init and its Hetzner
// datasource.
var Release = imagetest.Release{Family: "hetzner-debian-13", Suite: "trixie", Cloud: "hetzner",
	Image: &imagetest.CloudImage{Setup: hetznerSetupVersion, Prepare: prepareHetzner}}

// hetznerSetupVersion is CloudImage.Setup for the Hetzner shape (2: the
// files name this folder, where the shape moved from internal/vm/imagetest).
const hetznerSetupVersion = "2: hosts; resolv.conf to 169.254.169.254; hostname; cloud.cfg.d names the Hetzner datasource, network from outside; the DMI stand-in"

// prepareHetzner shapes the debootstrapped tree like Hetzner's debian-13
// image where it matters to the boot.
func prepareHetzner(root string) error {
	return imagetest.WriteFiles(root, map[string]string{
		"etc/hosts":    "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "egress-proxy\n",
		// The test's resolver stand-in (Hetzner's resolvers are public
		// addresses, which the proxy's filter allows on port 53 the same).
		"etc/resolv.conf": "nameserver 169.254.169.254\n",
		"etc/cloud/cloud.cfg.d/99-egress-imagetest.cfg": "# The egress image test's container (internal/provider/hetzner/hetznerimage/image.go):\n" +
			"# ds-identify cannot read a container's DMI, so the datasource is named;\n" +
			"# the network is set from outside, as Hetzner's DHCP sets a server's.\n" +
			"datasource_list: [ Hetzner ]\n" +
			"network: {config: disabled}\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.pth": "import egress_imagetest_dmi\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.py":  imagetest.DMIStandIn("a Hetzner server's SMBIOS", "internal/provider/hetzner/hetznerimage/image.go"),
	})
}
