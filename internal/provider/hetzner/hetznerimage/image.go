package imagetest

import "strings"

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
// files the test writes into each boot's copy (DMIDir), the values
// Hetzner's firmware gives. Everything else is Debian's cloud-init as
// packaged: the datasource, its reads of the metadata service, its
// user-data processing, write_files and the per-boot scripts.
//
// The network is configured from outside the container, as Hetzner's
// DHCP configures a server's: cloud-init's own network configuration is
// off, since the container has no DHCP server and its interface is set
// already.

// HetznerRelease is the Hetzner-shaped boot: Debian 13 as Hetzner's
// debian-13 image has it, with Debian's cloud-init and its Hetzner
// datasource.
var HetznerRelease = Release{Family: "hetzner-debian-13", Suite: "trixie", Cloud: "hetzner",
	Image: &CloudImage{Setup: hetznerSetupVersion, Prepare: prepareHetzner}}

// hetznerSetupVersion is CloudImage.Setup for the Hetzner shape.
const hetznerSetupVersion = "1: hosts; resolv.conf to 169.254.169.254; hostname; cloud.cfg.d names the Hetzner datasource, network from outside; the DMI stand-in"

// prepareHetzner shapes the debootstrapped tree like Hetzner's debian-13
// image where it matters to the boot.
func prepareHetzner(root string) error {
	return WriteFiles(root, map[string]string{
		"etc/hosts":    "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "egress-proxy\n",
		// The test's resolver stand-in (Hetzner's resolvers are public
		// addresses, which the proxy's filter allows on port 53 the same).
		"etc/resolv.conf": "nameserver 169.254.169.254\n",
		"etc/cloud/cloud.cfg.d/99-egress-imagetest.cfg": "# The egress image test's container (internal/vm/imagetest/hetznerimage.go):\n" +
			"# ds-identify cannot read a container's DMI, so the datasource is named;\n" +
			"# the network is set from outside, as Hetzner's DHCP sets a server's.\n" +
			"datasource_list: [ Hetzner ]\n" +
			"network: {config: disabled}\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.pth": "import egress_imagetest_dmi\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.py":  dmiStandIn,
	})
}

// DMIStandIn is the DMI stand-in for a cloud whose firmware cloud-init
// asks for system-manufacturer and system-serial-number, as Hetzner's
// and DigitalOcean's datasources do: the Python module the tree gets
// (dist-packages/egress_imagetest_dmi.py, with a .pth that imports it),
// which answers those two reads from DMIDir. what names the machine's
// SMBIOS ("a Droplet's SMBIOS") and file the shape's file that says why,
// in the module's docstring.
func DMIStandIn(what, file string) string {
	return strings.NewReplacer("a Hetzner server's SMBIOS", what, "internal/vm/imagetest/hetznerimage.go", file).Replace(dmiStandIn)
}

// dmiStandIn answers cloud-init's reads of the two SMBIOS fields a
// Hetzner server's firmware gives, from DMIDir, when that folder
// exists (only in the image test's boots), and leaves every other read
// to cloud-init.
const dmiStandIn = `"""The egress image test's stand-in for a Hetzner server's SMBIOS
(internal/vm/imagetest/hetznerimage.go): cloud-init reads no DMI in a
container, so system-manufacturer and system-serial-number are answered
from /etc/egress-imagetest/dmi, which only the image test's boots have."""
import os

_DIR = "/etc/egress-imagetest/dmi"
_FIELDS = {"system-manufacturer": "sys_vendor", "system-serial-number": "product_serial"}


def _patch():
    try:
        from cloudinit import dmi
    except ImportError:
        return
    original = dmi.read_dmi_data

    def read_dmi_data(key):
        name = _FIELDS.get(key)
        if name:
            try:
                with open(os.path.join(_DIR, name)) as f:
                    return f.read().strip()
            except OSError:
                pass
        return original(key)

    dmi.read_dmi_data = read_dmi_data


if os.path.isdir(_DIR):
    _patch()
`
