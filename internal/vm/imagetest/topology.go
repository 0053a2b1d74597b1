package imagetest

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
)

// The test's network. The VM and the clients have documentation
// addresses (the proxy never dials them: it answers them). The hosts the
// proxy reaches have public addresses, which the egress filter allows, as
// it must for any host on the internet: IANA's own 192.0.32.0/20 (where
// example.com once lived), not a documentation range, since those are on
// the deny list (vmconfig.DefaultDenyDestinations). None of it is routed off
// the machine: the namespaces have no link but their veth pair, so those
// addresses reach only the test's stand-ins. The metadata server's own
// address and one private address stand for the two things the proxy
// must never reach.
//
//	VM namespace            "internet" namespace
//	eth0 192.0.2.2/24 ──── vm0 192.0.2.1/24 (the VM's gateway)
//	                        lo: 169.254.169.254  metadata server stand-in (:80),
//	                                             and the VM's resolver (:53)
//	                            192.0.43.10      TLS host (:443, and :8443 to refuse)
//	                            192.0.43.11      plain HTTP host (:80)
//	                            192.0.43.12      Pub/Sub stand-in (:80)
//	                            192.0.43.13      storage stand-in (:80), the engine binary
//	                            10.99.0.1        a "private network" host (:443)
//	                            198.51.100.10    a client inside allowedSourceRanges
//	                            203.0.113.200    a client outside them
//
// Everything but the VM lives in one namespace: it is the VM's whole
// outside world, and the VM reaches all of it through its default route,
// as a Compute Engine VM reaches the metadata server and the internet
// through its subnet's gateway.
var (
	VMPrefix      = netip.MustParsePrefix("192.0.2.2/24")
	GatewayPrefix = netip.MustParsePrefix("192.0.2.1/24")

	MetadataAddr = netip.MustParseAddr("169.254.169.254")
	TLSHostAddr  = netip.MustParseAddr("192.0.43.10")
	// TLSHostName is the TLS host's name: the one in httptest's
	// certificate, which the resolver stand-in resolves to TLSHostAddr.
	TLSHostName  = "example.com"
	HTTPHostAddr = netip.MustParseAddr("192.0.43.11")
	PubSubAddr   = netip.MustParseAddr("192.0.43.12")
	StorageAddr  = netip.MustParseAddr("192.0.43.13")
	PrivateAddr  = netip.MustParseAddr("10.99.0.1")

	AllowedRange = netip.MustParsePrefix("198.51.100.0/24")
	ClientAddr   = netip.MustParseAddr("198.51.100.10")
	OutsiderAddr = netip.MustParseAddr("203.0.113.200")
)

// Ports of the stand-ins.
const (
	TLSPort      = 443
	RefusedPort  = 8443 // open on the TLS host, but not a port the proxy may CONNECT to
	HTTPPort     = 80
	PubSubPort   = 80
	StoragePort  = 80
	PrivatePort  = 443
	MetadataPort = 80
	DNSPort      = 53
	ProxyPort    = 3128
	// VMDev is the VM's interface, in its namespace, and GatewayDev its
	// peer in the internet's, where the VM's gateway is.
	VMDev, GatewayDev = "eth0", "vm0"
)

// Topology is the namespaces of a run.
type Topology struct {
	// VM is the namespace the container boots in.
	VM *Netns
	// Internet is everything outside the VM: stand-ins and, but in the
	// benchmark's topology, clients.
	Internet *Netns
	// IPv6 says RouteIPv6 gave the topology its IPv6 part.
	IPv6 bool
	// Client, in the benchmark's topology only, is where the clients are:
	// on the VM's other side, so that their direct path to the internet
	// is forwarded by the VM's namespace as the proxied one is relayed by
	// the proxy.
	Client *Netns
}

// NewTopology makes the namespaces, named prefix+"vm" and prefix+"net",
// and wires them as the diagram above shows. On error it deletes what it
// made.
func NewTopology(prefix string) (_ *Topology, err error) {
	t := &Topology{}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	if t.VM, err = NewNetns(prefix + "vm"); err != nil {
		return t, err
	}
	if t.Internet, err = NewNetns(prefix + "net"); err != nil {
		return t, err
	}
	if err := Link(t.VM, VMDev, t.Internet, GatewayDev); err != nil {
		return t, err
	}
	if err := t.VM.AddAddr(VMDev, VMPrefix); err != nil {
		return t, err
	}
	if err := t.Internet.AddAddr(GatewayDev, GatewayPrefix); err != nil {
		return t, err
	}
	for _, a := range []netip.Addr{MetadataAddr, TLSHostAddr, HTTPHostAddr, PubSubAddr, StorageAddr, PrivateAddr, ClientAddr, OutsiderAddr} {
		if err := t.Internet.AddAddr("lo", netip.PrefixFrom(a, a.BitLen())); err != nil {
			return t, err
		}
	}
	if err := t.VM.IP("route", "add", "default", "via", GatewayPrefix.Addr().String()); err != nil {
		return t, err
	}
	return t, nil
}

// ProxyAddr is where the VM's proxy listens, as clients dial it.
func ProxyAddr() string { return netip.AddrPortFrom(VMPrefix.Addr(), ProxyPort).String() }

// HostPort joins an address and a port.
func HostPort(a netip.Addr, port int) string { return netip.AddrPortFrom(a, uint16(port)).String() }

// Close deletes both namespaces.
func (t *Topology) Close() error {
	var errs []error
	for _, n := range []*Netns{t.VM, t.Internet, t.Client} {
		if n != nil {
			if err := n.Delete(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting the test's namespaces: %w", errors.Join(errs...))
	}
	return nil
}

// The benchmark's topology (NewBenchTopology): the clients in a namespace
// of their own, behind the VM, which routes them to the internet as well
// as proxying them.
//
//	client namespace              VM namespace                 "internet" namespace
//	eth0 198.51.100.10/24 ──── eth1 198.51.100.1/24
//	                              eth0 192.0.2.2/24 ──── vm0 192.0.2.1/24, the stand-ins
//	                                                     and the benchmark's servers:
//	                                                     192.0.43.20 bulk (:443)
//	                                                     192.0.43.21 HTTP (:80)
//	                                                     192.0.43.22 echo (:443)
var (
	BenchVMClientSide = netip.MustParsePrefix("198.51.100.1/24")
	BenchClientPrefix = netip.MustParsePrefix("198.51.100.10/24")
	BulkAddr          = netip.MustParseAddr("192.0.43.20")
	BenchHTTPAddr     = netip.MustParseAddr("192.0.43.21")
	EchoAddr          = netip.MustParseAddr("192.0.43.22")
)

// NewBenchTopology makes NewTopology's namespaces and the client's,
// prefix+"cli", with the VM forwarding between its two links.
func NewBenchTopology(prefix string) (_ *Topology, err error) {
	t, err := NewTopology(prefix)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	if t.Client, err = NewNetns(prefix + "cli"); err != nil {
		return t, err
	}
	if err := Link(t.Client, VMDev, t.VM, "eth1"); err != nil {
		return t, err
	}
	if err := t.Client.AddAddr(VMDev, BenchClientPrefix); err != nil {
		return t, err
	}
	if err := t.VM.AddAddr("eth1", BenchVMClientSide); err != nil {
		return t, err
	}
	if err := t.Client.IP("route", "add", "default", "via", BenchVMClientSide.Addr().String()); err != nil {
		return t, err
	}
	if err := t.Internet.IP("route", "add", BenchClientPrefix.Masked().String(), "via", VMPrefix.Addr().String()); err != nil {
		return t, err
	}
	// The clients live in their own namespace here, not on the
	// internet's loopback.
	for _, a := range []netip.Addr{ClientAddr, OutsiderAddr} {
		if err := t.Internet.IP("addr", "del", netip.PrefixFrom(a, 32).String(), "dev", "lo"); err != nil {
			return t, err
		}
	}
	for _, a := range []netip.Addr{BulkAddr, BenchHTTPAddr, EchoAddr} {
		if err := t.Internet.AddAddr("lo", netip.PrefixFrom(a, 32)); err != nil {
			return t, err
		}
	}
	// The VM's namespace forwards, as a router between the client and the
	// internet: the direct path the proxy is measured against.
	if out, err := exec.Command("ip", "netns", "exec", t.VM.Name, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		return t, fmt.Errorf("enabling forwarding in %s: %w: %s", t.VM.Name, err, out)
	}
	return t, nil
}

// The IPv6 part of the network, on the boots that route the VM a prefix
// (RouteIPv6): a link between the VM and its gateway, the VM's routed
// prefix behind it, as Hetzner routes a server its /64 and GCE a VM its
// /96, and a host of the internet at an IPv6 address of IANA's own
// 2620:0:2d0::/48 (public, as the IPv4 hosts' 192.0.32.0/20 is: the
// documentation range 2001:db8::/32 is on the deny list). The link and
// the prefix are documentation addresses: the proxy never dials them,
// it leaves from them.
//
//	VM namespace                       "internet" namespace
//	eth0 2001:db8:ffff::2/64 ──── vm0 2001:db8:ffff::1/64 (the VM's gateway)
//	                                   2001:db8:7:1::/64 via 2001:db8:ffff::2
//	                                   lo: 2620:0:2d0:200::10  the IPv6 host (:443),
//	                                       which answers each connection its source
var (
	VMLink6      = netip.MustParsePrefix("2001:db8:ffff::2/64")
	GatewayLink6 = netip.MustParsePrefix("2001:db8:ffff::1/64")
	VMIPv6Prefix = netip.MustParsePrefix("2001:db8:7:1::/64")
	IPv6HostAddr = netip.MustParseAddr("2620:0:2d0:200::10")
)

// IPv6HostPort is the IPv6 host's port: one of the default connectPorts.
const IPv6HostPort = 443

// RouteIPv6OnTheVM gives the topology its IPv6 part as a cloud-init
// cloud's VM has it at a create (Hetzner's servers): the prefix's first
// address on the VM's interface, the only global one there, and the
// gateway a link-local address; the prefix routed to the VM's link-local
// address. The VM's agent finds the prefix around that address
// (ipv6PrefixLength), as the reconciler cannot name it before the cloud
// assigned it.
func (t *Topology) RouteIPv6OnTheVM() error {
	if err := t.VM.IP("-6", "addr", "add", netip.PrefixFrom(VMIPv6Prefix.Addr().Next(), VMIPv6Prefix.Bits()).String(), "dev", VMDev, "nodad"); err != nil {
		return err
	}
	if err := t.routeLinkLocal6(); err != nil {
		return err
	}
	return t.Internet.IP("-6", "route", "add", VMIPv6Prefix.String(), "via", vmLinkLocal, "dev", GatewayDev)
}

// routeLinkLocal6 is the IPv6 part of a link whose gateway is
// link-local: the two link-local addresses, the VM's default route by
// the gateway's, and the IPv6 host.
func (t *Topology) routeLinkLocal6() error {
	if err := t.VM.IP("-6", "addr", "add", vmLinkLocal+"/64", "dev", VMDev, "nodad"); err != nil {
		return err
	}
	if err := t.Internet.IP("-6", "addr", "add", gatewayLinkLocal+"/64", "dev", GatewayDev, "nodad"); err != nil {
		return err
	}
	if err := t.Internet.AddAddr("lo", netip.PrefixFrom(IPv6HostAddr, 128)); err != nil {
		return err
	}
	if err := t.VM.IP("-6", "route", "add", "default", "via", gatewayLinkLocal, "dev", VMDev); err != nil {
		return err
	}
	t.IPv6 = true
	return nil
}

// RouteIPv6ToEC2 gives the topology the IPv6 part an EC2 instance in a
// dual-stack subnet has before its addresses are known: the link, its
// gateway link-local (as a VPC's router is to an instance), the VM's
// default route and the IPv6 host. The instance's own address and its
// delegated prefix are the EC2 fake's, given at launch: RouteDelegated
// adds them.
func (t *Topology) RouteIPv6ToEC2() error { return t.routeLinkLocal6() }

// RouteDelegated gives the VM its own IPv6 address, addr in its subnet,
// and routes the address and prefix, the /80 EC2 delegated to its
// interface apart from that address, to the VM's link-local address,
// as a VPC routes a delegated prefix to its interface. Nothing on the VM
// says the prefix: its agent reads it from IMDS.
func (t *Topology) RouteDelegated(addr, prefix netip.Prefix) error {
	if err := t.VM.IP("-6", "addr", "add", addr.String(), "dev", VMDev, "nodad"); err != nil {
		return err
	}
	for _, p := range []netip.Prefix{netip.PrefixFrom(addr.Addr(), 128), prefix} {
		if err := t.Internet.IP("-6", "route", "add", p.String(), "via", vmLinkLocal, "dev", GatewayDev); err != nil {
			return err
		}
	}
	return nil
}

// The link-local addresses of RouteIPv6OnTheVM's link: Hetzner's
// servers route by fe80::1.
const (
	gatewayLinkLocal = "fe80::1"
	vmLinkLocal      = "fe80::2"
)

// RouteIPv6 gives the topology its IPv6 part: the link's addresses, the
// VM's default route, the VM's prefix routed to it, and the IPv6 host's
// address. What makes the prefix's addresses the VM's own (a local route
// on lo) is the VM's agent's to add, from the configuration's
// ipv6Prefix.
func (t *Topology) RouteIPv6() error {
	if err := t.VM.AddAddr(VMDev, VMLink6); err != nil {
		return err
	}
	if err := t.Internet.AddAddr(GatewayDev, GatewayLink6); err != nil {
		return err
	}
	if err := t.Internet.AddAddr("lo", netip.PrefixFrom(IPv6HostAddr, 128)); err != nil {
		return err
	}
	if err := t.VM.IP("-6", "route", "add", "default", "via", GatewayLink6.Addr().String()); err != nil {
		return err
	}
	if err := t.Internet.IP("-6", "route", "add", VMIPv6Prefix.String(), "via", VMLink6.Addr().String()); err != nil {
		return err
	}
	t.IPv6 = true
	return nil
}
