// Package ec2fake is a fake of the part of Amazon EC2 (and of STS) the
// aws provider uses, for tests that drive the official Go SDK
// (github.com/aws/aws-sdk-go-v2/service/ec2) and AWS's own CLI (Debian's
// awscli, pointed at it with --endpoint-url) against it; AWS ships no
// emulator of EC2's API. It speaks EC2's query protocol: a form-encoded
// POST with Action and Version, lists flattened as Name.1, Name.2, and
// an XML answer in EC2's namespace, or an <Response><Errors> document
// with EC2's error code and HTTP status.
//
// The SDK's EC2 types carry no wire names (its serializers are generated
// code), so the fake's request paths and XML elements are its own, and
// model_test.go holds each of them to AWS's published service model,
// ec2/2016-11-15/service-2.json (which Debian's awscli ships): every
// query parameter the fake reads is a member of the operation's input,
// by its query name, and every element it writes a member of the
// output, by its locationName.
//
// What it serves, a file per resource:
//
//	instances.go  RunInstances (ClientToken semantics, tags at launch), DescribeInstances (filters, paging), TerminateInstances
//	addresses.go  Elastic IPs: AllocateAddress, AssociateAddress, DisassociateAddress, DescribeAddresses, ReleaseAddress
//	catalog.go    regions, DescribeAvailabilityZones, DescribeImages (Debian's official AMIs), instance types
//	filters.go    EC2's filters (tag:KEY, tag-key, instance-state-name, … with * and ? wildcards)
//	faults.go     errors in the answer: capacity, the request rate, any code by action, lost answers
//	quotas.go     the account's regional quotas (instances, vCPUs, Elastic IPs) and DescribeAccountAttributes
//	ratelimit.go  request throttling: token buckets per region by category, RunInstances's and TerminateInstances's resource buckets, RequestLimitExceeded
//	sts.go        STS AssumeRoleWithWebIdentity, checking the token's signature (a JWKS), issuer, audience and subject
//	serve.go      the local stack's instances booting their engines on loopback (package loopback)
//	server.go     routing, the region (from the request's signature), the access key, encoding, the clock
//
// The region of a request is the one its SigV4 signature names (the
// Credential scope of its Authorization header), as for an endpoint that
// serves every region: the SDK and the CLI sign with the region they
// call, so one fake holds every region apart.
//
// Nothing finishes by itself: RunInstances answers instances "pending"
// and TerminateInstances "shutting-down"; Settle makes the pending
// running (with a public address), the stopping stopped and the
// shutting-down terminated. A terminated instance stays listed, as EC2
// lists one for about an hour.
//
// A test plays what AWS does on its own:
//
//	Settle, SetState, Put            finish what is in progress, change a state, plant an instance
//	NoCapacity, Unsupported          an availability zone without room, or without the instance type
//	Fail, LoseAnswers                refuse the next calls of an action with any code; do them and lose the answer
//	SetQuotas, SetInstanceLimit      the account's regional quotas: instances, vCPUs, Elastic IPs (InstanceLimitExceeded,
//	                                 VcpuLimitExceeded, AddressLimitExceeded; EC2Quotas: five Elastic IPs; off in a new fake)
//	TrustWebIdentity                 STS's trust of a web identity (issuer, audience, subjects, keys)
//	SetRateLimits                    EC2's request throttling (EC2RateLimits are its defaults; off in a new fake)
//	SetRateLimitRemaining            the account's other callers empty the bucket after n more requests
//	SetClock                         the fake's time
//	RateLimitTokens, Throttled       the tokens left in a region's buckets, the requests refused
//	Calls, Instances, Addresses      what the fake was asked, and what it holds
//	StartServing, StopServing        the local stack's instances boot: each runs the proxy
//	                                 engine of its user-data on a loopback address (serve.go)
//
// The comment beside each behaviour says which part of the EC2 API
// reference it follows, and what the fake assumes where it is silent.
package ec2fake
