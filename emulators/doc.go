// Package emulators holds all the project's emulator code, in one place:
// starting Google's Firestore and Pub/Sub emulators (emulator), giving tests
// the running ones (emulatortest), the local stand-ins for the parts of
// Google Cloud that have no emulator — Eventarc's delivery of Firestore and
// Pub/Sub events, and Cloud Scheduler (eventarc) — and running the whole
// local stack as a process (stack). The programs that use them are the
// developer's, in dev/.
//
// Only dev/ and tests import it (deploy's layout test holds that): deleting
// it breaks no production code.
package emulators
