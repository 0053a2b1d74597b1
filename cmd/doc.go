// Package cmd holds, below it, the two programs the project ships:
//
//   - egress: the CLI users install (go install
//     github.com/egress-proxies/egress/cmd/egress);
//   - egress-proxy: the binary every proxy VM runs, the engine and its
//     configuration agent (internal/vm).
//
// The functions are not here: Cloud Run builds them from functions/. The
// developer's programs (the local stack, the benchmark, the simulation) are
// in dev/.
package cmd
