// Package dev holds, below it, the developer's programs; none is deployed
// or shipped:
//
//   - localstack: the whole product on one machine (make run);
//   - with-emulators: a command run with the emulators started (make test);
//   - bench: what a proxy costs and how fast the system converges (make
//     bench);
//   - sim: the seeded fault simulation (make sim);
//   - proxy-bench: the proxy engine measured from outside;
//   - render-bootstrap: a proxy's startup script, printed;
//   - gendocs: the pages of docs/ the code knows, written (make docs).
package dev
