// Package dev holds, below it, the developer's programs; none is deployed
// or shipped:
//
//   - localstack: the whole product on one machine (make run);
//   - with-emulators: a command run with the emulators started (make test);
//   - bench: what a proxy costs and how fast the system converges (make
//     bench);
//   - sim: the seeded fault simulation (make sim);
//   - proxy-bench: the proxy engine measured from outside;
//   - gendocs: the pages of docs/ the code knows, written (make docs).
//
// A cloud's own developer programs live in its folder (the startup script
// a Compute Engine VM runs, printed: internal/provider/gcp/cmd/render-bootstrap).
package dev
