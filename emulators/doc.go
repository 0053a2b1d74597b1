// Package emulators holds the local stand-ins for the parts of Google Cloud
// that have no emulator — Eventarc's delivery of Firestore and Pub/Sub events,
// and Cloud Scheduler — and the commands that run the project locally on
// Google's Firestore and Pub/Sub emulators.
//
// Nothing outside this folder imports it: deleting it breaks no production
// code.
package emulators
