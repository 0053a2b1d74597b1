package imagetest

import "strings"

// CloudImage is what makes a debootstrapped Debian a cloud-init cloud's
// image, as Debian's cloud-init sees it in a container: each cloud's own
// file says why its choices are faithful (ec2image.go, a shape's
// image.go). Rootfs applies it once to the cached tree; the firmware's
// values of each boot, which depend on the VM, go into each boot's copy
// (cloudShape.firmware).
type CloudImage struct {
	// Setup names what Prepare does, in the tree's cache key: change it
	// when Prepare changes, so that the cached tree is built again.
	Setup string
	// Prepare shapes the tree at root.
	Prepare func(root string) error
}

// CloudInitPackages are Packages with Debian's cloud-init, which
// Hetzner's images and Debian's AWS images run, in place of Google's guest environment.
var CloudInitPackages = []string{
	"systemd", "systemd-sysv", "dbus",
	"curl", "ca-certificates", "iproute2", "nftables",
	"cloud-init",
	// What provides a virtual package cloud-init's dependencies need
	// (python3-cryptography's python3-cffi-backend-api-*), which
	// debootstrap does not resolve by itself.
	"python3-cffi-backend",
}

// DMIDir is where the DMI stand-in (dmiStandIn) reads the SMBIOS fields a
// cloud's firmware would give, in the booted tree, as sysfs names them
// (sys_vendor, product_serial, product_uuid): each boot's copy gets the
// files (cloudShape.firmware), since the values are the VM's.
const DMIDir = "etc/egress-imagetest/dmi"

// DMIStandIn is the DMI stand-in for a cloud whose datasource asks the
// firmware for system-manufacturer and system-serial-number (a
// shape's image.go says which): the Python module the tree gets
// (dist-packages/egress_imagetest_dmi.py, with a .pth that imports it),
// which answers those two reads from DMIDir. what names the machine's
// SMBIOS ("a Droplet's SMBIOS") and file the shape's file that says why,
// in the module's docstring.
func DMIStandIn(what, file string) string {
	return strings.NewReplacer("WHAT", what, "FILE", file).Replace(dmiStandIn)
}

// dmiStandIn is DMIStandIn's module, WHAT and FILE in its docstring
// standing for its arguments: it answers cloud-init's reads of the two
// SMBIOS fields from DMIDir, when that folder exists (only in the image
// test's boots), and leaves every other read to cloud-init.
const dmiStandIn = `"""The egress image test's stand-in for WHAT
(FILE): cloud-init reads no DMI in a
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
