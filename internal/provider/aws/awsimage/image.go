package awsimage

import (
	"strings"

	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// What makes the EC2-shaped root file system an EC2 instance as Debian's
// cloud-init sees it, in a container. On a Nitro instance the firmware's
// SMBIOS says system-manufacturer "Amazon EC2" and a system-uuid that
// starts with "ec2": cloud-init's Ec2 datasource identifies AWS by the
// second (identify_aws), and only on AWS does it ask IMDS for a token
// first (IMDSv2), which the provider's instances require
// (HttpTokens=required); elsewhere it would try IMDSv1, which IMDS then
// refuses. A container has no SMBIOS of its own and cloud-init reads none
// in one, so, as for the Hetzner shape (hetznerimage's image.go), the test stands
// in for the firmware in two places and nowhere else: cloud.cfg.d names
// the Ec2 datasource (datasource_list, so ds-identify enables it without
// reading DMI) and IMDS on IPv4 alone (the test's network has no
// [fd00:ec2::254]); and the DMI stand-in answers the two fields from
// files each boot's copy gets (imagetest.DMIDir). Everything else is
// Debian's cloud-init as packaged: the Ec2 datasource, its IMDSv2
// session, its crawl of the metadata and the user-data, write_files and
// the per-boot scripts.
//
// At init-local, the datasource (its Ec2Local form) tries DHCP on the
// interface first, as on an instance; in the container dhcpcd cannot set
// the interface up (its /proc/sys is read-only) and ends at once, and
// the datasource reads IMDS over the interface as it is, which the test
// set from outside. cloud-init's own network configuration is off.

// Release is the EC2-shaped boot: Debian 13 as Debian's AWS image has
// it, with Debian's cloud-init and its Ec2 datasource.
var Release = imagetest.Release{Family: "ec2-debian-13", Suite: "trixie", Cloud: "ec2",
	Image: &imagetest.CloudImage{Setup: ec2SetupVersion, Prepare: prepareEC2}}

// ec2SetupVersion is CloudImage.Setup for the EC2 shape (2: the files
// name this folder, where the shape moved from internal/vm/imagetest).
const ec2SetupVersion = "2: hosts; resolv.conf to 169.254.169.254; hostname; cloud.cfg.d names the Ec2 datasource and IMDS on IPv4, network from outside; the DMI stand-in of system-uuid"

// prepareEC2 shapes the debootstrapped tree like Debian's AWS image where
// it matters to the boot.
func prepareEC2(root string) error {
	return imagetest.WriteFiles(root, map[string]string{
		"etc/hosts":    "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "egress-proxy\n",
		// The test's resolver stand-in (an instance's resolver is the
		// VPC's, which the proxy's filter allows on port 53 the same).
		"etc/resolv.conf": "nameserver 169.254.169.254\n",
		"etc/cloud/cloud.cfg.d/99-egress-imagetest.cfg": "# The egress image test's container (internal/provider/aws/awsimage/image.go):\n" +
			"# ds-identify cannot read a container's DMI, so the datasource is named;\n" +
			"# IMDS is on IPv4 alone; the network is set from outside.\n" +
			"datasource_list: [ Ec2 ]\n" +
			"datasource: {Ec2: {metadata_urls: [ 'http://169.254.169.254' ]}}\n" +
			"network: {config: disabled}\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.pth": "import egress_imagetest_dmi\n",
		"usr/lib/python3/dist-packages/egress_imagetest_dmi.py":  ec2DMIStandIn,
	})
}

// ec2DMIStandIn is the DMI stand-in (imagetest.DMIStandIn) with the fields an EC2
// instance's firmware gives.
var ec2DMIStandIn = strings.NewReplacer(
	"system-manufacturer and system-serial-number are answered", "system-manufacturer and system-uuid are answered",
	`"system-serial-number": "product_serial"`, `"system-uuid": "product_uuid"`,
).Replace(imagetest.DMIStandIn("an EC2 instance's SMBIOS", "internal/provider/aws/awsimage/image.go"))
