package mock

// OnLoopback is onLoopback, for the tests of what a mock VM's engine runs.
var OnLoopback = onLoopback
