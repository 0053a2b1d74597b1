// Package imagetest proves the proxy VM's startup script on a really booted
// Debian 13 and Debian 12 (Releases), the releases of the gcp provider's
// default image and the one before, since no Compute Engine is at hand
// where the tests run; and measures the proxy's data path there
// (TestImageBench, make image-bench).
//
// It builds each release's root file system once with debootstrap, shaped
// like Google's image and without anything of the project (cached outside
// the repository and keyed by release and package list, see Rootfs), boots
// a throwaway copy of it with systemd under systemd-nspawn inside a network
// namespace of its own, and surrounds it with stand-ins: a metadata server
// on 169.254.169.254 that serves the metadata of the insert request the gcp
// provider sent (Metadata), a Pub/Sub publish endpoint for the call-home
// (PubSub), the deployment's bucket serving the engine built from the tree
// (Storage), hosts on the internet (Host) and places the proxy must never
// reach (Sink). Topology draws the network.
//
// The startup script runs as Compute Engine runs it: Debian's
// google-guest-agent package runs google-startup-scripts.service, whose
// google_metadata_script_runner reads startup-script from the metadata
// server and executes it. The full guest agent runs beside it, as on a VM.
//
// Beside them it boots Debian 13 shaped like cloud-init clouds' images:
// Debian's cloud-init and its datasource for the cloud read the user-data
// the cloud's provider made from a stand-in of the cloud's metadata
// service, and the control plane's prober reads Ready through the proxy
// port. A Debian 13 shaped like Debian's AWS image (EC2Release), with
// cloud-init's Ec2 datasource and AWS's own metadata mock
// (amazon-ec2-metadata-mock behind EC2Metadata; ec2_test.go,
// ec2image.go). And a Debian 13 booted as an
// Azure VM (AzureRelease), with cloud-init's Azure datasource reading the
// OVF environment, asking a stand-in of Azure's IMDS (AzureMetadata,
// written from Microsoft's documentation: Microsoft publishes no mock)
// and reporting ready to a stand-in of its wire server (AzureWireServer),
// and the agent applying a change of the VM's userData without a reboot
// (azure_test.go, azureimage.go, azuremetadata.go). These boots are cloudinit_test.go's,
// one entry each of its table cloudShapes.
//
// Other clouds' shapes live in the clouds' own folders, on this
// package's library for them (Shape, Harness, VM: shape.go), each named
// by its plugin's ImageTest; make docs lists those shapes for TestImage
// (shapes_gen_test.go), which boots them after its own.
//
// The test itself (make image-test) then checks from outside, one
// assertion each, what a user and an attacker would see: see TestImage.
// Everything here needs root; nothing here is used by production code.
package imagetest
