package imagetest

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"net"
)

// What makes the Azure-shaped root file system an Azure VM as Debian's
// cloud-init sees it, in a container. Debian's cloud-init 25.1 runs its
// Azure datasource (cloudinit/sources/DataSourceAzure.py) at init-local,
// and on Azure it:
//
//   - finds the OVF environment (ovf-env.xml: the VM's host name, its
//     admin user, and its customData, base64, which is the user-data),
//     first in the seed folder /var/lib/cloud/seed/azure, then on the
//     provisioning media Azure attaches to a new VM (/dev/sr0, a UDF or
//     ISO 9660 disc), then in the copy an earlier boot kept
//     (/var/lib/waagent);
//   - brings the primary NIC up for the while by DHCP (ephemeral
//     networking), whose lease on Azure routes 169.254.169.254 and the
//     wire server 168.63.129.16 through the subnet's gateway: a NIC whose
//     lease routes neither is not the primary one;
//   - reads IMDS's instance document (/metadata/instance?api-version=
//     2021-08-01&extended=true, with "Metadata: true"): the admin user,
//     the computer name, the NICs;
//   - reports ready to the wire server (GET /machine/?comp=goalstate,
//     POST /machine?comp=health), the report that ends a VM's
//     provisioning on Azure, and ejects the provisioning media;
//   - takes the VM's instance id from its SMBIOS system-uuid (cloud-init
//     reads no DMI in a container, and fails the datasource without it).
//
// The test stands in for what a container lacks, and nothing else:
//
//   - the SMBIOS: the DMI stand-in (as for Hetzner: internal/provider/hetzner/hetznerimage/image.go)
//     answers system-manufacturer "Microsoft Corporation", system-uuid the
//     VM's id and chassis-asset-tag Azure's own (7783-7084-3265-9085-8269-
//     3286-77, by which cloud-init tells Azure) from files of each boot's
//     copy;
//   - the provisioning media: the OVF environment, with the VM's customData,
//     is in the seed folder (each boot's copy: the VM's), which the
//     datasource reads first, as it would the disc's;
//   - DHCP: the container cannot run a DHCP client (its interface is set
//     from outside, and dhcpcd, the datasource's client, cannot set it
//     up), and there is no DHCP server on the test's link, so the module
//     answers the datasource's DHCP discovery with the lease Azure's DHCP
//     gives a primary NIC, read from a file of each boot's copy: the VM's
//     address and gateway as the test set them, and the classless static
//     routes to IMDS and the wire server through the gateway (Azure's
//     lease also routes 0.0.0.0/0, which is left out here: the datasource
//     adds each route for the while and deletes it after, and the
//     default route is the container's own, set from outside);
//   - the wire server and IMDS: stand-ins on the test's internet
//     (azuremetadata.go), the wire server also the VM's resolver, as on
//     Azure;
//   - ds-identify cannot read the asset tag either: cloud.cfg.d names the
//     datasource (datasource_list: [ Azure ]). The network is set from
//     outside (network: {config: disabled}).
//
// What the test cannot show of Azure's real provisioning: the disc
// itself (its mount, and its ejection after the ready report); the wire
// server's protocol beyond the goal state's three fields and the health
// report's state (its certificates, the extension and agent
// configuration it serves, the Linux agent, waagent, which Debian's Azure
// images also run and which is not installed here); the KVP pool the
// datasource writes its diagnostics to for Hyper-V (no Hyper-V here); a
// real DHCP exchange and the lease's option 245, by which Azure may name
// another wire server (the datasource keeps 168.63.129.16 without it);
// the NIC's private address behind Azure's NAT (the test's VM has its
// public address on its interface); and what IMDS serves beyond the
// fields cloud-init and the agent read.

// AzureRelease is the Azure-shaped boot: Debian 13 as Debian's Azure
// image has it, with Debian's cloud-init and its Azure datasource.
var AzureRelease = Release{Family: "azure-debian-13", Suite: "trixie", Cloud: "azure",
	Image: &CloudImage{Setup: azureSetupVersion, Prepare: prepareAzure}}

// azureSetupVersion is CloudImage.Setup for the Azure shape.
const azureSetupVersion = "1: hosts; resolv.conf to 168.63.129.16; hostname; cloud.cfg.d names the Azure datasource, network from outside; the DMI and DHCP stand-in"

// azureChassisAssetTag is the chassis asset tag of every Azure VM's
// SMBIOS, which cloud-init's ds_detect and ds-identify look for.
const azureChassisAssetTag = "7783-7084-3265-9085-8269-3286-77"

// azureLeaseFile is where the DHCP stand-in reads the lease, in the
// booted tree (beside DMIDir).
const azureLeaseFile = "etc/egress-imagetest/dhcp-lease.json"

// azureSeedOVF is the OVF environment's place in the seed folder.
const azureSeedOVF = "var/lib/cloud/seed/azure/ovf-env.xml"

// prepareAzure shapes the debootstrapped tree like Debian's Azure image
// where it matters to the boot.
func prepareAzure(root string) error {
	return WriteFiles(root, map[string]string{
		"etc/hosts":    "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "egress-proxy\n",
		// Azure's resolver is the wire server's address.
		"etc/resolv.conf": "nameserver " + WireServerAddr.String() + "\n",
		"etc/cloud/cloud.cfg.d/99-egress-imagetest.cfg": "# The egress image test's container (internal/vm/imagetest/azureimage.go):\n" +
			"# ds-identify cannot read a container's DMI, so the datasource is named;\n" +
			"# the network is set from outside.\n" +
			"datasource_list: [ Azure ]\n" +
			"network: {config: disabled}\n",
		"usr/lib/python3/dist-packages/egress_imagetest_azure.pth": "import egress_imagetest_azure\n",
		"usr/lib/python3/dist-packages/egress_imagetest_azure.py":  azureStandIn,
	})
}

// azureFirmware is what each boot's copy gets of the VM's firmware and
// network: its SMBIOS (the DMI stand-in's files) and the lease of its
// primary NIC.
func azureFirmware(vmID string) map[string]string {
	lease, _ := json.Marshal(map[string]string{
		"interface":     VMDev,
		"fixed-address": VMPrefix.Addr().String(),
		"subnet-mask":   net.IP(net.CIDRMask(VMPrefix.Bits(), 32)).String(),
		"routers":       GatewayPrefix.Addr().String(),
		"classless-static-routes": WireServerAddr.String() + "/32 " + GatewayPrefix.Addr().String() + " " +
			MetadataAddr.String() + "/32 " + GatewayPrefix.Addr().String(),
	})
	return map[string]string{
		DMIDir + "/sys_vendor":        "Microsoft Corporation\n",
		DMIDir + "/product_uuid":      vmID + "\n",
		DMIDir + "/chassis_asset_tag": azureChassisAssetTag + "\n",
		azureLeaseFile:                string(lease) + "\n",
	}
}

// azureOVF is the OVF environment Azure writes on a new Linux VM's
// provisioning media (in the seed folder of each boot's copy:
// azureSeedOVF), with its customData (base64 of the user-data), host name
// and admin user, as cloud-init's reader (OvfEnvXml) takes it: the
// provisioning section (host name, admin user, no password, SSH password
// login off, the customData) and the platform settings (no
// pre-provisioned VM, no guest proxy agent).
func azureOVF(hostname, adminUser, userData string) string {
	return `<?xml version="1.0" encoding="utf-8"?>
<ns0:Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:ns0="http://schemas.dmtf.org/ovf/environment/1" xmlns:ns1="http://schemas.microsoft.com/windowsazure" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">
  <ns1:ProvisioningSection>
    <ns1:Version>1.0</ns1:Version>
    <ns1:LinuxProvisioningConfigurationSet>
      <ns1:ConfigurationSetType>LinuxProvisioningConfiguration</ns1:ConfigurationSetType>
      <ns1:HostName>` + html.EscapeString(hostname) + `</ns1:HostName>
      <ns1:UserName>` + html.EscapeString(adminUser) + `</ns1:UserName>
      <ns1:DisableSshPasswordAuthentication>true</ns1:DisableSshPasswordAuthentication>
      <ns1:CustomData>` + base64.StdEncoding.EncodeToString([]byte(userData)) + `</ns1:CustomData>
    </ns1:LinuxProvisioningConfigurationSet>
  </ns1:ProvisioningSection>
  <ns1:PlatformSettingsSection>
    <ns1:Version>1.0</ns1:Version>
    <ns1:PlatformSettings>
      <ns1:KmsServerHostname>kms.core.windows.net</ns1:KmsServerHostname>
      <ns1:ProvisionGuestAgent>false</ns1:ProvisionGuestAgent>
      <ns1:GuestAgentPackageName i:nil="true" />
      <ns1:PreprovisionedVm>false</ns1:PreprovisionedVm>
      <ns1:PreprovisionedVMType i:nil="true" />
    </ns1:PlatformSettings>
  </ns1:PlatformSettingsSection>
</ns0:Environment>
`
}

// azureStandIn answers cloud-init's reads of the three SMBIOS fields an
// Azure VM's firmware gives, and its DHCP discovery, from files only the
// image test's boots have, and leaves everything else to cloud-init.
const azureStandIn = `"""The egress image test's stand-in for an Azure VM's SMBIOS and the
lease of its primary NIC (internal/vm/imagetest/azureimage.go): cloud-init
reads no DMI in a container, and the container runs no DHCP client, so
system-manufacturer, system-uuid and chassis-asset-tag are answered from
/etc/egress-imagetest/dmi and the DHCP discovery from
/etc/egress-imagetest/dhcp-lease.json, which only the image test's boots
have."""
import json
import os

_DIR = "/etc/egress-imagetest/dmi"
_LEASE = "/etc/egress-imagetest/dhcp-lease.json"
_FIELDS = {
    "system-manufacturer": "sys_vendor",
    "system-uuid": "product_uuid",
    "chassis-asset-tag": "chassis_asset_tag",
}


def _patch_dmi():
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


def _patch_dhcp():
    try:
        from cloudinit.net import dhcp
    except ImportError:
        return

    def dhcp_discovery(self, interface, dhcp_log_func=None, distro=None):
        with open(_LEASE) as f:
            lease = json.load(f)
        if interface and interface != lease["interface"]:
            raise dhcp.NoDHCPLeaseError()
        return lease

    for name in ("IscDhclient", "Dhcpcd", "Udhcpc"):
        cls = getattr(dhcp, name, None)
        if cls is not None:
            cls.dhcp_discovery = dhcp_discovery


if os.path.isdir(_DIR):
    _patch_dmi()
if os.path.isfile(_LEASE):
    _patch_dhcp()
`
