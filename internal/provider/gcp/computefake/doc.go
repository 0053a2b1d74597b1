// Package computefake is a fake of the part of the Compute Engine REST API
// the gcp provider calls — instances insert, get, delete and aggregated
// list — answering with protojson-encoded computepb messages as the real API
// does (64-bit numbers as strings, errors in the googleapi shape), so the
// real Go client can be pointed at it with option.WithEndpoint and
// option.WithoutAuthentication. Google ships no Compute emulator.
//
// It keeps instances per zone, moves them from PROVISIONING to RUNNING and
// removes deleted ones when told to (Settle), honours insert request ids, and
// can inject errors and unreachable zones.
//
// The files follow the API's resources: server.go routes requests and holds
// what every resource shares (faults, errors, encoding); instances.go is the
// instances resource.
package computefake
