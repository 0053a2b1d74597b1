package agent

import "github.com/egress-proxies/egress/internal/vm/imds/imdsmock"

// EC2Instance is the instance AWS's metadata mock plays in this
// package's tests (in both its packages: a process runs one mock).
var EC2Instance = imdsmock.Config{InstanceID: "i-0feedbeef1234567a", Zone: "eu-central-1a", Region: "eu-central-1", UserData: []byte("#cloud-config\n"),
	MAC: "02:4f:1a:2b:3c:4d", IPv6Prefixes: []string{"2a05:d014:9b2:7e00:4c2f::/80"}}
