// Package azurefake is a fake of the part of Azure Resource Manager the
// azure provider calls, and of the Entra ID token endpoint it gets its
// tokens from, for the local stack and for tests that drive a real
// client against it: the Azure SDK for Go, or Azure's own CLI (Debian's
// azure-cli, TestAzureCLIAgainstTheFake). It imports nothing of Azure's:
// what it reads and writes is ARM's JSON, as Microsoft's REST API
// reference for Microsoft.Compute and Microsoft.Network describes it.
//
// It serves over TLS (httptest's certificate, which CertPEM, CAFile and
// CertPool hand to a client), since MSAL, the token library of both the
// SDK and az, refuses an authority that is not https.
//
// What it serves, a file per part:
//
//	compute.go     virtual machines PUT (If-None-Match: * refuses one that exists, 412), PATCH (userData, tags, size),
//	               GET ($expand=userData, instanceView), list, DELETE with its deleteOptions; disks GET, list, DELETE
//	network.go     public IP addresses and NICs PUT, GET, list, DELETE; VNets, subnets, NSGs and the
//	               resource group GET (seeded by the test, as Terraform makes them)
//	operations.go  long-running operations: 201/202 with Azure-AsyncOperation and Location, their status and result
//	token.go       Entra ID: OpenID configuration, the v2.0 token endpoint (client_credentials with a client
//	               secret or a client assertion), instance discovery; the cloud's metadata; subscriptions and tenants
//	faults.go      capacity (SkuNotAvailable at once, AllocationFailed and ZonalAllocationFailed through the
//	               operation), quota, throttling (429 with Retry-After), any fault by route
//	seed.go        seeding (resource group, VNets, subnets, NSGs, another tool's VMs) and reading back
//	serve.go       Serve: VMs that boot the real engine on loopback, for the local stack; a PATCH of
//	               userData applied to the running engine in place
//	ratelimit.go   ARM's throttling: token buckets of reads, writes and deletes, 429 SubscriptionRequestsThrottled
//	quotas.go      a location's quotas (vCPUs, VMs, public IPs): QuotaExceeded, PublicIPCountLimitReached; the
//	               usages of Microsoft.Compute and Microsoft.Network
//	server.go      routing, authentication, api-version, paging (nextLink), ARM's error shape, Tamper
//
// Every answer is ARM's envelope: id, name, type, location, tags (zones,
// sku, etag, managedBy where the type has them) and properties with
// provisioningState. Errors are {"error": {"code", "message"}} with
// ARM's codes: 404 ResourceNotFound (ResourceGroupNotFound,
// SubscriptionNotFound), 412 PreconditionFailed, 409 for conflicts and
// capacity and quota, 400 for references Azure refuses (a NIC or public
// IP still held: NicInUse, PublicIPAddressCannotBeDeleted). Any
// api-version is taken (one is required, as ARM requires it); APIVersions
// says which each route saw.
//
// Long-running operations: a PUT, PATCH or DELETE answers at once with
// the resource in a transient provisioningState (Creating, Updating,
// Deleting) and an operation whose status a client polls. By default an
// operation is done at its first poll (SetPollsToFinish changes that; 0
// holds every one until Settle, for a test that stops a client between
// its request and its poller's end, and resumes it from a ResumeToken).
// A VM delete takes along what its deleteOptions say when its operation
// finishes: each NIC referenced with deleteOption Delete, that NIC's
// public IPs whose own properties.deleteOption is Delete, and the OS disk
// whose deleteOption is Delete; what says Detach stays, free.
//
// Authentication: ARM's routes take only a bearer token the fake's token
// endpoint handed out, to a client that AddClientSecret or
// AddClientAssertion let in. MSAL asks login.microsoftonline.com for
// instance discovery of an authority host it does not know, which a test
// offline cannot reach: azidentity turns that off with
// ClientOptions.DisableInstanceDiscovery; MSAL Python (az) skips it for
// an ADFS authority, so az's custom cloud names the fake's authority as
// https://127.0.0.1:PORT/adfs (the fake's OpenID configuration there
// names the fake's tenant's token endpoint).
//
// A test plays what Azure does on its own:
//
//	SeedNetwork, AddResourceGroup, AddVirtualNetwork,
//	AddSubnet, AddNetworkSecurityGroup          what Terraform makes
//	PutVM                                       another tool's VM (with its NIC, public IP, disk)
//	AddClientSecret, AddClientAssertion         who may have tokens
//	SetPollsToFinish, Settle, InProgress        long-running operations
//	FailCreates (SkuNotAvailable, AllocationFailed,
//	ZonalAllocationFailed, QuotaExceeded)       capacity and quota, by location and zone
//	Fail (Throttled, Status)                    refuse the next calls of a route
//	SetRateLimits (AzureRateLimits)             ARM's throttling buckets, off until set
//	SetQuotas                                   a location's quotas, none enforced until set
//	SetPageSize                                 list paging
//	Tamper                                      change what the fake writes (a test of the test)
//	Inventory, VM, NIC, PublicIP                what exists
//	Calls, Requests, APIVersions, Grants        what the fake was asked, and by whom
//	AcceptToken                                 a fixed token ARM takes (a client that asks no one)
//	StartServing, StopServing, Serving          the local stack's VMs boot: each runs the proxy engine of
//	                                            its customData on its public IP's loopback address
//	                                            (serve.go); HTTPClient, NewHandler: in-process, for the
//	                                            simulation; NewHTTP: plain HTTP
package azurefake
