// Package computefake is a fake of the part of the Compute Engine REST API
// the gcp provider uses, for tests that drive the real Go client
// (cloud.google.com/go/compute/apiv1) against it with option.WithEndpoint
// and option.WithoutAuthentication; Google ships no Compute emulator. It
// answers protojson-encoded computepb messages as the real API does (64-bit
// numbers as strings, errors in the googleapi shape).
//
// What it serves, a file per resource:
//
//	instances.go   instances insert, get, delete and aggregatedList
//	fingerprint.go instances.setMetadata and setLabels, under their fingerprints
//	guest.go       instances.getGuestAttributes
//	serial.go      instances.getSerialPortOutput
//	addresses.go   regional external addresses insert, get, delete and aggregatedList
//	operations.go  zoneOperations and regionOperations get, list and wait;
//	               globalOperations.aggregatedList
//	regions.go     regions.get, for the zones of a region and its quotas
//	ipv6.go        an instance's external IPv6 address, in a dual-stack subnet
//	filter.go      the part of the list filter language the fake understands
//	requestid.go   requestId de-duplication, for every insert and delete
//	failures.go    inserts that are accepted and fail in their operation
//	ratelimit.go   the rate quotas: each project's requests per minute by group, 403 rateLimitExceeded past them
//	quotas.go      the regional quotas (CPUS, INSTANCES, IN_USE_ADDRESSES, STATIC_ADDRESSES): QUOTA_EXCEEDED past them
//	server.go      routing, faults, encoding, the clock
//
// Nothing finishes by itself. Every insert and delete answers a RUNNING
// operation, and Settle finishes all that is in progress at once:
// operations become DONE (with their error, if they fail), provisioning
// instances RUNNING with an external IP, deleted instances and addresses
// gone. So a test sees each state: right after a call, and after Settle.
// The fake's clock (SetClock, Advance) stamps creation and operation times
// and measures RequestIDWindow, so tests never sleep.
//
// A test plays what Compute and the VM do on their own:
//
//	Settle                        finish what is in progress
//	Put, SetStatus                plant instances and states
//	SetDualStack                  a subnet where instances may have an external IPv6
//	Fail                          refuse the next calls of a method in their HTTP answer
//	FailInserts, FailEveryInsert  accept inserts that fail in their operation (quota, stockout)
//	SetUnreachable                zones an aggregated list cannot read
//	SetGuestAttribute             a guest attribute the VM wrote
//	AppendSerial                  the VM's console output
//	SetRateLimits                 meter Compute's rate quotas (ComputeRateLimits are its defaults; off in a new fake)
//	SetRateLimitRemaining         the project's other callers spent the minute after n more requests
//	SetQuotas                     a region's quota limits (none enforced in a new fake)
//	SetClock, Advance             the fake's time
//	OnWait                        what happens when a client waits on an operation (Settle, for gcloud)
//	Touch                         another client's change of metadata or labels
//	Inserts, Calls                what the fake was asked (SetMetadataCalls, SetLabelsCalls too)
//	Requests, RateLimitUsed       every request it was sent, and the minute's counts by quota group
//	Instances                     how many instances it holds
//
// Instances and addresses are kept by zone and region whatever project a
// request names, as a test uses one project; request ids, which Compute
// scopes by project, are remembered per project.
//
// Besides the Go client, Google's Cloud CLI reads and deletes what the
// provider made here (internal/provider/gcp's TestGcloudAgainstTheFake).
//
// The comment beside each behaviour cites the Compute documentation it
// follows, and says what the fake assumes where the documentation is
// silent.
package computefake
