# The proxies' network: in each allowed location a virtual network with one
# subnet (a virtual network is a location's), which every proxy's NIC joins
# (AZURE_SUBNET_IDS), and the network security group on that subnet. A
# Standard public IP admits nothing until a network security group opens
# it; this one opens the proxy ports to the allowed sources and to the
# control plane's status request, and refuses everything else, including
# what Azure's default rules would let in from the virtual network and
# Azure's load balancer. Outbound, Azure's default rules let every
# destination out, which the VM's own filter narrows.

locals {
  # The VMs have IPv4 addresses only (a Standard IPv4 public IP each), and
  # Azure refuses a rule that mixes IPv4 and IPv6 prefixes.
  ipv4_sources = [for r in var.allowed_source_ranges : r if !strcontains(r, ":")]

  # The rules that admit anything, the same in every location: the proxy
  # ports from the allowed sources over TCP and UDP (SOCKS5's UDP relay
  # listens on its proxy port's number, spec.socks5UDP; where no proxy
  # turned it on, the VM's own filter drops the datagrams), and from the
  # control plane's egress over TCP for the status request, to which the
  # engine answers those addresses the status alone
  # (vmconfig.StatusAccess). Lower priorities are read first; the deny
  # below is read last.
  allow_rules = concat([
    {
      name        = "proxy-ports-tcp"
      description = "The proxy ports, from the allowed source ranges."
      priority    = 100
      protocol    = "Tcp"
      sources     = local.ipv4_sources
      ports       = var.proxy_ports
    },
    {
      name        = "proxy-ports-udp"
      description = "SOCKS5's UDP relay on the proxy ports' numbers, from the allowed source ranges."
      priority    = 110
      protocol    = "Udp"
      sources     = local.ipv4_sources
      ports       = var.proxy_ports
    },
    ], length(var.status_source_ranges) == 0 ? [] : [
    {
      name        = "status-from-the-control-plane"
      description = "The control plane's status request on the proxy ports, from the functions' fixed egress."
      priority    = 120
      protocol    = "Tcp"
      sources     = var.status_source_ranges
      ports       = var.proxy_ports
    },
  ])
}

resource "azurerm_virtual_network" "proxies" {
  for_each            = toset(var.locations)
  name                = "egress-proxies-${each.key}"
  resource_group_name = azurerm_resource_group.proxies.name
  location            = each.key
  address_space       = [var.address_space]
  tags                = local.tags
}

resource "azurerm_subnet" "proxies" {
  for_each             = toset(var.locations)
  name                 = "proxies"
  resource_group_name  = azurerm_resource_group.proxies.name
  virtual_network_name = azurerm_virtual_network.proxies[each.key].name
  address_prefixes     = [var.address_space]
  # A VM leaves through its own public IP, and through nothing else: no
  # address of Azure's choosing for one without.
  default_outbound_access_enabled = false
}

resource "azurerm_network_security_group" "proxies" {
  for_each            = toset(var.locations)
  name                = "egress-proxies-${each.key}"
  resource_group_name = azurerm_resource_group.proxies.name
  location            = each.key
  tags                = local.tags

  dynamic "security_rule" {
    for_each = local.allow_rules
    content {
      name                       = security_rule.value.name
      description                = security_rule.value.description
      priority                   = security_rule.value.priority
      direction                  = "Inbound"
      access                     = "Allow"
      protocol                   = security_rule.value.protocol
      source_address_prefixes    = security_rule.value.sources
      source_port_range          = "*"
      destination_address_prefix = "*"
      destination_port_ranges    = security_rule.value.ports
    }
  }
  # Read before Azure's default rules AllowVnetInBound (65000) and
  # AllowAzureLoadBalancerInBound (65001), which would admit the virtual
  # network and Azure's load balancer: from anywhere else, nothing.
  security_rule {
    name                       = "deny-everything-else"
    description                = "Nothing but the rules above reaches a proxy."
    priority                   = 4096
    direction                  = "Inbound"
    access                     = "Deny"
    protocol                   = "*"
    source_address_prefix      = "*"
    source_port_range          = "*"
    destination_address_prefix = "*"
    destination_port_range     = "*"
  }
}

# The network security group on the subnet, so that no NIC of the
# deployment is outside it, whatever the NIC itself names.
resource "azurerm_subnet_network_security_group_association" "proxies" {
  for_each                  = toset(var.locations)
  subnet_id                 = azurerm_subnet.proxies[each.key].id
  network_security_group_id = azurerm_network_security_group.proxies[each.key].id
}
