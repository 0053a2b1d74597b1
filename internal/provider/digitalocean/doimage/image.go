package doimage

import "github.com/egress-proxies/egress/internal/vm/imagetest"

// What makes the DigitalOcean-shaped root file system a Droplet as
// Debian's cloud-init sees it, in a container. cloud-init's DigitalOcean
// datasource (cloudinit/sources/DataSourceDigitalOcean.py, with
// helpers/digitalocean.py, in Debian's cloud-init 25.1) decides it is on
// DigitalOcean by the firmware's SMBIOS alone: system-manufacturer must be
// "DigitalOcean", and system-serial-number is the Droplet's id, without
// which it refuses to go on; on every later boot it keeps its cached
// metadata only while that serial still is the instance id
// (check_instance_id). ds-identify, the systemd generator that decides
// whether cloud-init runs at all, looks for the same vendor in
// /sys/class/dmi/id. Then the datasource reads one document,
// http://169.254.169.254/metadata/v1.json, and takes from it the
// instance id (droplet_id), the hostname, the region (its availability
// zone), the interfaces, the public keys, the user-data and the
// vendor-data; dns.nameservers with the interfaces only when it writes
// the network's configuration.
//
// A container has no SMBIOS of its own (it sees the host's /sys, which is
// not a Droplet's), and cloud-init reads no DMI in a container on purpose
// (cloudinit.dmi.read_dmi_data returns None whenever it runs in one). So,
// as for the Hetzner shape (internal/vm/imagetest/hetznerimage.go), whose datasource checks the
// same two fields, the test stands in for the firmware and nothing else:
// cloud.cfg.d names the DigitalOcean datasource (datasource_list, so
// ds-identify enables it without reading DMI, as it does for any image
// that names a single datasource); and the DMI stand-in answers
// system-manufacturer "DigitalOcean" and system-serial-number the
// Droplet's id, what a Droplet's firmware gives, from files each boot's
// copy gets (imagetest.DMIDir). The datasource's own detection, read_sysinfo, runs
// as packaged and is what decides.
//
// One setting of the datasource's own is changed: use_ip4LL. On a Droplet,
// at init-local, the interface has no address yet; the datasource lends
// the first physical interface a random link-local address to reach
// 169.254.169.254 and, once it has read the document, flushes the
// interface's addresses, which cloud-init's network stage then sets from
// the same document. In the container the interface is a veth (no
// physical interface: the datasource would find none and fail), its
// address and route to the metadata service already set from outside, and
// the flush would take that address away with nothing to set it again.
// So the datasource reads the service over the interface as it is, as
// the EC2 shape's does once its DHCP could not run
// (internal/vm/imagetest/ec2image.go).
// cloud-init's own network configuration is off (network from outside).
// Everything else is Debian's cloud-init as packaged: the datasource, its
// read of the metadata service, the user-data and vendor-data
// processing, write_files and the per-boot scripts.
//
// One thing of the container's own is set right, as on a Droplet: its
// /sys/class/net. The datasource computes the network's configuration
// whenever cloud-init asks whether it has one, even when cloud-init will
// not apply it, and that fails the whole init-local stage unless each
// interface of the document is found on the machine by its MAC address
// (helpers/digitalocean.py, convert_network_configuration). systemd-nspawn
// joined to a prepared network namespace mounts the host's sysfs, whose
// /sys/class/net lists the host's interfaces, not the VM's. A unit the
// test adds (doSysfsUnit) mounts, before cloud-init starts, a sysfs of
// the container's own network namespace over /sys/class/net and
// /sys/devices/virtual/net, so cloud-init finds eth0 with the MAC the
// metadata gives, as a Droplet's cloud-init finds its NIC.
//
// cloud-init has marked this datasource deprecated since 23.2: Debian's
// 25.1 still ships and runs it, and logs at every boot that it "is
// deprecated in 23.2 and scheduled to be removed in 28.2. Deprecated in
// favour of DataSourceConfigDrive.", which cloud-init counts among its
// recoverable errors, not its errors. A Debian whose cloud-init is 28.2
// or later needs this shape to become a ConfigDrive one.

// Release is the DigitalOcean-shaped boot: Debian 13 with Debian's
// cloud-init and its DigitalOcean datasource, as a Droplet boots it.
var Release = imagetest.Release{Family: "do-debian-13", Suite: "trixie", Cloud: "do",
	Image: &imagetest.CloudImage{Setup: doSetupVersion, Prepare: prepareDO}}

// doSetupVersion is CloudImage.Setup for the DigitalOcean shape (2: the
// files name this folder, where the shape moved from internal/vm/imagetest).
const doSetupVersion = "2: hosts; resolv.conf to 169.254.169.254; hostname; cloud.cfg.d names the DigitalOcean datasource, no ip4LL, network from outside; the DMI stand-in; /sys/class/net of the VM's namespace before cloud-init"

// prepareDO shapes the debootstrapped tree like a Droplet's Debian 13
// where it matters to the boot.
func prepareDO(root string) error {
	return imagetest.WriteFiles(root, map[string]string{
		"etc/hosts":    "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "egress-proxy\n",
		// The test's resolver stand-in (a Droplet's resolvers are
		// DigitalOcean's public addresses, which the proxy's filter allows
		// on port 53 the same); the metadata names it (Metadata).
		"etc/resolv.conf": "nameserver 169.254.169.254\n",
		"etc/cloud/cloud.cfg.d/99-egress-imagetest.cfg": "# The egress image test's container (internal/provider/digitalocean/doimage/image.go):\n" +
			"# ds-identify cannot read a container's DMI, so the datasource is named;\n" +
			"# the metadata service is read over the interface as it is, set from\n" +
			"# outside (no link-local address lent and flushed); the network is set\n" +
			"# from outside.\n" +
			"datasource_list: [ DigitalOcean ]\n" +
			"datasource: {DigitalOcean: {use_ip4LL: false}}\n" +
			"network: {config: disabled}\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.pth": "import egress_imagetest_dmi\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.py":  doDMIStandIn,
		"etc/systemd/system/egress-imagetest-sysfs.service":      doSysfsUnit,
		"etc/systemd/system/cloud-init-main.service.d/egress-imagetest-sysfs.conf": "[Unit]\n" +
			"Wants=egress-imagetest-sysfs.service\nAfter=egress-imagetest-sysfs.service\n",
	})
}

// doSysfsUnit mounts a sysfs of the container's network namespace and
// binds its network devices over the host's, before cloud-init's single
// process starts (its drop-in wants and orders it).
const doSysfsUnit = `[Unit]
Description=The egress image test: /sys/class/net of the VM's own network namespace (internal/provider/digitalocean/doimage/image.go)
DefaultDependencies=no
Before=cloud-init-main.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/mkdir -p /run/egress-imagetest/sys
ExecStart=/bin/mount -t sysfs sysfs /run/egress-imagetest/sys
ExecStart=/bin/mount --bind /run/egress-imagetest/sys/class/net /sys/class/net
ExecStart=/bin/mount --bind /run/egress-imagetest/sys/devices/virtual/net /sys/devices/virtual/net
`

// doDMIStandIn is the DMI stand-in (imagetest.DMIStandIn), which
// answers the two fields a Droplet's firmware gives.
var doDMIStandIn = imagetest.DMIStandIn("a Droplet's SMBIOS", "internal/provider/digitalocean/doimage/image.go")
