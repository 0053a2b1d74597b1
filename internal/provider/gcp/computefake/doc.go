// Package computefake is a fake of the part of the Compute Engine REST API
// the gcp provider calls — instances insert, get, delete and aggregated
// list, and the zone operations they answer — answering with protojson-encoded computepb messages as the real API
// does (64-bit numbers as strings, errors in the googleapi shape), so the
// real Go client can be pointed at it with option.WithEndpoint and
// option.WithoutAuthentication. Google ships no Compute emulator.
//
// It keeps instances per zone, moves them from PROVISIONING to RUNNING and
// removes deleted ones when told to (Settle), and can inject errors and
// unreachable zones. A request that repeats a request id the project used
// within RequestIDWindow is ignored as Compute ignores it: it answers the
// first request's operation and does nothing else (requestid.go). An insert
// can be made to fail as quota and stockouts fail, in its operation and not
// in its HTTP answer (FailInserts, FailEveryInsert; failures.go). Regional
// static external addresses can be reserved, read, listed and deleted; an
// instance whose access config names one as natIP gets it, and the address
// is IN_USE until the instance is gone (addresses.go); their operations
// are regionOperations'. Tests play the VM with SetGuestAttribute, read back
// through instances.getGuestAttributes (guest.go), and AppendSerial, read
// back through instances.getSerialPortOutput (serial.go). Every insert and delete answers
// a RUNNING operation that zoneOperations.get and zoneOperations.list serve
// and that Settle makes DONE. Times come from the fake's own clock
// (SetClock, Advance), so a test can let time pass without sleeping.
//
// The files follow the API's resources: server.go routes requests and holds
// what every resource shares (faults, errors, encoding, the clock);
// instances.go is the instances resource, operations.go the operations,
// requestid.go the de-duplication of requests, and filter.go the part of the list filter language the fake understands.
package computefake
