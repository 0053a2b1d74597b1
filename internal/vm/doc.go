// Package vm holds, below it, everything that runs on a proxy VM, apart
// from the control plane that creates the VMs:
//
//   - engine: the forward proxy (HTTP CONNECT and plain HTTP), with
//     engine/loadtest, the harness that measures it;
//   - agent: the configuration agent, which follows the instance's
//     configuration and applies each change without a new VM;
//   - vmconfig: the contract between the two sides — the engine's
//     configuration, the metadata items and guest attributes, the startup
//     script's template — and the one package here the control plane
//     imports;
//   - imagetest: the proof, on a really booted Debian 13 and 12.
//
// Their binary is cmd/egress-proxy. The control plane renders what a VM
// receives in internal/bootstrap; deploy's layout test holds that nothing
// but the VM's own code, the mock provider's loopback VMs and the
// developer's tools imports the engine or the agent.
package vm
