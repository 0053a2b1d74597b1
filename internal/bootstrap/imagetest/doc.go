// Package imagetest proves the proxy VM's startup script on a really booted
// Debian 12, the release of the gcp provider's default image, since no
// Compute Engine is at hand where the tests run.
//
// It builds a Debian root file system once with debootstrap (cached outside
// the repository and keyed by the package list, see Rootfs), boots a
// throwaway copy of it with systemd under systemd-nspawn inside a network
// namespace of its own, and surrounds it with stand-ins: a metadata server
// on 169.254.169.254 that serves the metadata of the insert request the gcp
// provider sent (Metadata), a Pub/Sub publish endpoint for the call-home
// (PubSub), hosts on the internet (Host) and places the proxy must never
// reach (Sink). Topology draws the network.
//
// The startup script runs as Compute Engine runs it: Debian's
// google-guest-agent package runs google-startup-scripts.service, whose
// google_metadata_script_runner reads startup-script from the metadata
// server and executes it. The full guest agent runs beside it, as on a VM.
//
// The test itself (make image-test) then checks from outside, one
// assertion each, what a user and an attacker would see: see TestImage.
// Everything here needs root; nothing here is used by production code.
package imagetest
