package imagetest

// CloudImage is what makes a debootstrapped Debian a cloud-init cloud's
// image, as Debian's cloud-init sees it in a container: each cloud's own
// file says why its choices are faithful (hetznerimage.go,
// ec2image.go). Rootfs applies it once to the cached tree; the firmware's
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
